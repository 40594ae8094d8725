//! The clusters `bench --cluster` starts itself: three `testkeeper serve --id N --peers ...`
//! processes (this binary, in memory, default Raft timings) or a 3-server Apache ZooKeeper 3.8
//! ensemble (Debian's package, `forceSync=no`, one JVM, conf and data dir per server), all on
//! free loopback ports. A member can be killed (SIGKILL by PID) and started again on its ports;
//! every child is killed by PID when the ensemble is dropped.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::spawn::{
    four_letter_word, free_port, free_ports, mntr_value, zookeeper_jvm, STARTUP_TIMEOUT, ZK_JVM, ZOOKEEPER_JAR,
};

/// Members of each cluster.
pub const SIZE: usize = 3;

/// Which server a cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Testkeeper,
    ZooKeeper,
}

/// Where testkeeper member `i` writes its error lines.
fn stderr_file(dir: &std::path::Path, i: usize) -> PathBuf {
    dir.join(format!("member{}.err", i + 1))
}

/// Starts of a cluster whose member found its port taken, before the bench gives up.
const BIND_ATTEMPTS: u32 = 3;

/// A running 3-member cluster.
#[derive(Debug)]
pub struct Ensemble {
    pub kind: Kind,
    pub label: &'static str,
    /// Client addresses, member 1 first.
    pub addrs: Vec<SocketAddr>,
    /// How to start member i again (same ports, same flags or conf).
    commands: Vec<Vec<String>>,
    children: Vec<Option<Child>>,
    dir: PathBuf,
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Ensemble {
    /// Starts the cluster and waits until every member serves under one leader.
    ///
    /// # Errors
    /// A member that cannot be spawned, dies, or no leader within the startup timeout.
    pub fn start(kind: Kind, seed: u64) -> Result<Ensemble, String> {
        // A free port can be taken by another process between our probe and the member's
        // bind (tests start clusters side by side): then the whole cluster starts over on
        // fresh ports.
        let mut attempt = 1;
        loop {
            match Self::start_on_fresh_ports(kind, seed) {
                Err(e) if e.contains("Address already in use") && attempt < BIND_ATTEMPTS => {
                    eprintln!("bench: {e}; starting the cluster again on fresh ports");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn start_on_fresh_ports(kind: Kind, seed: u64) -> Result<Ensemble, String> {
        if kind == Kind::ZooKeeper && !std::path::Path::new(ZOOKEEPER_JAR).is_file() {
            return Err(format!("{ZOOKEEPER_JAR} not found; run scripts/install-test-deps.sh"));
        }
        let tag = if kind == Kind::Testkeeper { "tk" } else { "zk" };
        let dir = std::env::temp_dir().join(format!("testkeeper-bench-{tag}3-{}-{}", std::process::id(), free_port()?));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let ports: Vec<(u16, u16, u16)> = free_ports(3 * SIZE)?.chunks(3).map(|p| (p[0], p[1], p[2])).collect();
        let addrs = ports.iter().map(|p| SocketAddr::from((Ipv4Addr::LOCALHOST, p.0))).collect();
        let commands = match kind {
            Kind::Testkeeper => {
                let peers: Vec<String> =
                    ports.iter().enumerate().map(|(i, p)| format!("{}=127.0.0.1:{}", i + 1, p.1)).collect();
                let peers = peers.join(",");
                (0..SIZE)
                    .map(|i| {
                        let listen = format!("127.0.0.1:{}", ports[i].0);
                        let (id, seed) = ((i + 1).to_string(), seed.to_string());
                        ["serve", "--id", &id, "--peers", &peers, "--listen", &listen, "--seed", &seed]
                            .map(String::from)
                            .to_vec()
                    })
                    .collect()
            }
            Kind::ZooKeeper => zookeeper_confs(&dir, &ports)?,
        };
        let label = if kind == Kind::Testkeeper { "testkeeper" } else { "zookeeper" };
        let mut e = Ensemble { kind, label, addrs, commands, children: (0..SIZE).map(|_| None).collect(), dir };
        for i in 0..SIZE {
            e.spawn(i)?;
        }
        e.await_whole()?;
        Ok(e)
    }

    fn spawn(&mut self, i: usize) -> Result<(), String> {
        let child = match self.kind {
            Kind::Testkeeper => {
                let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
                let mut cmd = Command::new(exe);
                cmd.args(&self.commands[i]).env("RUST_LOG", "error");
                // Its error lines, for a member that exits (appended across restarts).
                let err = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(stderr_file(&self.dir, i))
                    .map_err(|e| format!("{} member {}: stderr file: {e}", self.label, i + 1))?;
                cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(err);
                cmd.spawn()
            }
            Kind::ZooKeeper => {
                let member = self.dir.join(format!("s{}", i + 1));
                zookeeper_jvm(&member, &member.join("conf"), &ZK_JVM)?.spawn()
            }
        };
        self.children[i] = Some(child.map_err(|e| format!("spawning {} member {}: {e}", self.label, i + 1))?);
        Ok(())
    }

    /// Member `i`'s role (`leader`, `follower`), or `None` while it does not serve.
    pub fn role(&self, i: usize) -> Option<String> {
        let srvr = four_letter_word(self.addrs[i], "srvr").ok()?;
        srvr.lines().find_map(|l| l.strip_prefix("Mode: ")).map(|m| m.trim().to_string())
    }

    /// Every member's client address but the leader's (index `leader`), in member order.
    pub fn followers(&self, leader: usize) -> Vec<SocketAddr> {
        (0..SIZE).filter(|i| *i != leader).map(|i| self.addrs[i]).collect()
    }

    /// The index of the member that says it leads, if one does.
    pub fn leader(&self) -> Option<usize> {
        (0..SIZE).find(|i| self.children[*i].is_some() && self.role(*i).as_deref() == Some("leader"))
    }

    /// Waits until every running member serves, one of them as leader.
    ///
    /// # Errors
    /// A member died, or none leads within the startup timeout.
    pub fn await_whole(&mut self) -> Result<usize, String> {
        let start = Instant::now();
        loop {
            for (i, c) in self.children.iter_mut().enumerate() {
                if let Some(Ok(Some(status))) = c.as_mut().map(Child::try_wait) {
                    let text = std::fs::read_to_string(stderr_file(&self.dir, i)).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().collect();
                    let said = lines[lines.len().saturating_sub(5)..].join("; ");
                    return Err(format!("{} member {} exited: {status}: {said}", self.label, i + 1));
                }
            }
            let roles: Vec<Option<String>> = (0..SIZE)
                .map(|i| if self.children[i].is_some() { self.role(i) } else { Some("killed".into()) })
                .collect();
            let leaders = roles.iter().filter(|r| r.as_deref() == Some("leader")).count();
            if leaders == 1 && roles.iter().all(Option::is_some) && self.caught_up() {
                return self.leader().ok_or_else(|| "the leader went away".to_string());
            }
            if start.elapsed() > STARTUP_TIMEOUT {
                return Err(format!("{}: no whole cluster within {STARTUP_TIMEOUT:?}: roles {roles:?}", self.label));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether every running member has applied the same index. A restarted testkeeper
    /// member reports a role while it still replays or installs the leader's snapshot (a
    /// ZooKeeper follower reports its mode only once synced with its leader), and a client
    /// connecting to it meanwhile may be cut off; nothing writes while this is asked.
    fn caught_up(&self) -> bool {
        if self.kind != Kind::Testkeeper {
            return true;
        }
        let applied = |i: usize| mntr_value(self.addrs[i], "last_applied_index", Duration::from_secs(2)).ok();
        let seen: Vec<Option<String>> = (0..SIZE).filter(|i| self.children[*i].is_some()).map(applied).collect();
        seen.iter().all(|a| a.is_some() && *a == seen[0])
    }

    /// Kills member `i` at once.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts member `i` again and waits until the cluster is whole.
    ///
    /// # Errors
    /// As [`Ensemble::await_whole`].
    pub fn restart(&mut self, i: usize) -> Result<(), String> {
        self.spawn(i)?;
        self.await_whole().map(|_| ())
    }
}

/// Writes each ZooKeeper member's `conf/zoo.cfg` and `data/myid` under `dir/sN`.
fn zookeeper_confs(dir: &std::path::Path, ports: &[(u16, u16, u16)]) -> Result<Vec<Vec<String>>, String> {
    let servers: String =
        ports.iter().enumerate().map(|(i, (_, q, e))| format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1)).collect();
    for (i, (client, _, _)) in ports.iter().enumerate() {
        let member = dir.join(format!("s{}", i + 1));
        let (conf, data) = (member.join("conf"), member.join("data"));
        let io = |e: std::io::Error| format!("preparing {}: {e}", member.display());
        std::fs::create_dir_all(&conf).map_err(io)?;
        std::fs::create_dir_all(&data).map_err(io)?;
        std::fs::write(data.join("myid"), format!("{}\n", i + 1)).map_err(io)?;
        let cfg = format!(
            "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client}\nclientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\nforceSync=no\n4lw.commands.whitelist=*\nadmin.enableServer=false\n{servers}",
            data.display()
        );
        std::fs::write(conf.join("zoo.cfg"), cfg).map_err(io)?;
    }
    // The JVM command is rebuilt from the member's directory at each start.
    Ok(vec![Vec::new(); ports.len()])
}
