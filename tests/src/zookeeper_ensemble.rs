//! A throwaway 3-server Apache ZooKeeper 3.8 ensemble (Debian's package) on loopback: three
//! JVMs, each with its own conf and data dir (`myid`), `server.N=127.0.0.1:P1:P2` lines and a
//! client port, all on free ports. The cluster scenarios of the conformance suite run against
//! it (`conform --target a,b,c`). A server can be killed and started again on its ports and
//! data dir, and the ensemble is a [`ClusterControl`] (servers numbered 1..=3 as their `myid`).
//! Dropping it kills the JVMs by PID.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::cluster_control::ClusterControl;
use crate::env::{self, ZOOKEEPER_JAR};
use crate::net::{self, free_ports};
use crate::process::ServerChild;
use crate::zookeeper::{cfg_lines, is_serving, spawn_jvm, startup_timeout, ZooKeeperConfig, BIND_ATTEMPTS};

/// Servers in the ensemble.
pub const SIZE: usize = 3;

/// Three servers of one ensemble; killed (SIGKILL by PID) and reaped on drop.
#[derive(Debug)]
pub struct ZooKeeperEnsemble {
    // Killed before the directory goes; `None` while killed.
    servers: Vec<Option<ServerChild>>,
    addrs: Vec<SocketAddr>,
    config: ZooKeeperConfig,
    /// Starts so far, to name each start's log.
    starts: usize,
    dir: TempDir,
}

impl ZooKeeperEnsemble {
    /// Starts the ensemble and waits until every server serves (one leader, two followers).
    ///
    /// # Errors
    /// ZooKeeper not installed, a server that dies, or no quorum within the startup timeout;
    /// the message carries the log tails.
    pub fn start() -> Result<ZooKeeperEnsemble, String> {
        if !env::zookeeper_installed() {
            return Err(format!("Debian ZooKeeper not installed ({ZOOKEEPER_JAR} or java missing)"));
        }
        // A port can be taken between free_port and the JVM's bind (by another test's server
        // or by an outgoing connection's ephemeral port): then start over on fresh ports.
        let mut attempt = 1;
        loop {
            match Self::start_on_fresh_ports() {
                Err(e) if attempt < BIND_ATTEMPTS && e.contains("Address already in use") => {
                    eprintln!(
                        "ZooKeeper ensemble: a port was taken before its JVM bound it, attempt {attempt}: retrying"
                    );
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn start_on_fresh_ports() -> Result<ZooKeeperEnsemble, String> {
        let config = ZooKeeperConfig::default();
        let dir = tempfile::Builder::new().prefix("testkeeper-zk3-").tempdir().map_err(|e| e.to_string())?;
        // Client, quorum and election port per server.
        let ports: Vec<(u16, u16, u16)> = free_ports(3 * SIZE).chunks(3).map(|p| (p[0], p[1], p[2])).collect();
        let peers: String =
            ports.iter().enumerate().map(|(i, (_, q, e))| format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1)).collect();
        let mut servers = Vec::new();
        let mut addrs = Vec::new();
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let id = i + 1;
            let conf = dir.path().join(format!("conf{id}"));
            let data = dir.path().join(format!("data{id}"));
            let io = |what: &str, e: std::io::Error| format!("ZooKeeper {id}: {what}: {e}");
            std::fs::create_dir_all(&conf).map_err(|e| io("conf dir", e))?;
            std::fs::create_dir_all(&data).map_err(|e| io("data dir", e))?;
            std::fs::write(data.join("myid"), format!("{id}\n")).map_err(|e| io("myid", e))?;
            let cfg = format!(
                "dataDir={}\nclientPort={client}\ninitLimit=10\nsyncLimit=5\n{}{peers}",
                data.display(),
                cfg_lines(&config)
            );
            let zoo_cfg = conf.join("zoo.cfg");
            std::fs::write(&zoo_cfg, cfg).map_err(|e| io("zoo.cfg", e))?;
            let log = dir.path().join(format!("zookeeper-{id}.log"));
            servers.push(Some(spawn_jvm(&config, &conf, &zoo_cfg, &log)?));
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, *client)));
        }
        let bound = startup_timeout(&config) * 2;
        let mut ensemble = ZooKeeperEnsemble { servers, addrs, config, starts: SIZE, dir };
        ensemble.wait_for_quorum(bound)?;
        Ok(ensemble)
    }

    fn wait_for_quorum(&mut self, bound: Duration) -> Result<(), String> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(i) = self.servers.iter_mut().position(|s| s.as_mut().is_some_and(|s| s.exited().is_some())) {
                return Err(format!("ZooKeeper {} of the ensemble died: {}", i + 1, self.describe_one(i, 40)));
            }
            let up = self.servers.iter().zip(&self.addrs).filter(|(s, _)| s.is_some());
            if up.clone().all(|(_, a)| is_serving(*a)) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let tails: Vec<String> = (0..self.servers.len()).map(|i| self.describe_one(i, 20)).collect();
                return Err(format!("the ensemble did not form within {bound:?}:\n{}", tails.join("\n")));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Server `i`'s state and the last `n` lines of its log that tell its story: the tests
    /// poll `mntr` and `srvr` every quarter second, and a server without a leader logs each
    /// poll with a stack trace, which would leave only that in the tail (an election that did
    /// not finish showed as nothing but those).
    fn describe_one(&mut self, i: usize, n: usize) -> String {
        let Some(s) = self.servers[i].as_mut() else { return format!("ZooKeeper {} (killed)", i + 1) };
        let state = match s.exited() {
            Some(status) => format!("exited with {status}"),
            None => "still running".to_string(),
        };
        let poll =
            ["Processing mntr command", "Processing srvr command", "Processing ruok command", "Close of session 0x0"];
        let story = |l: &str| {
            !poll.iter().any(|p| l.contains(p))
                && !l.contains("ZooKeeperServer not running")
                && !l.trim_start().starts_with("at ")
        };
        let tail = crate::process::tail_lines_where(s.log_path(), n, story);
        format!(
            "ZooKeeper {} (pid {}) {state}; last {n} lines of {} (without the tests' polling):\n{tail}",
            i + 1,
            s.pid(),
            s.log_path().display()
        )
    }

    /// Kills server `id` (1-based, its myid) by PID, at once.
    pub fn kill_server(&mut self, id: u64) {
        self.servers[id as usize - 1] = None;
    }

    /// Starts server `id` again on its ports and data dir, and waits until it serves.
    ///
    /// # Errors
    /// The JVM does not start or does not join within the startup timeout.
    pub fn restart_server(&mut self, id: u64) -> Result<(), String> {
        let i = id as usize - 1;
        self.servers[i] = None;
        let conf = self.dir.path().join(format!("conf{id}"));
        // A fresh log per start: the first one stays for a failure's story.
        self.starts += 1;
        let log = self.dir.path().join(format!("zookeeper-{id}-start{}.log", self.starts));
        self.servers[i] = Some(spawn_jvm(&self.config, &conf, &conf.join("zoo.cfg"), &log)?);
        self.wait_for_quorum(startup_timeout(&self.config) * 2)
    }

    /// The client addresses, server 1 first.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// `a,b,c`, as `conform --target` and ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.addrs.iter().map(SocketAddr::to_string).collect::<Vec<_>>().join(",")
    }

    /// Each server's `Mode:` from `srvr` (leader or follower).
    pub fn modes(&self) -> Vec<String> {
        self.addrs
            .iter()
            .map(|a| {
                let srvr = net::four_letter_word(*a, "srvr", Duration::from_secs(2)).unwrap_or_default();
                srvr.lines().find_map(|l| l.strip_prefix("Mode: ")).unwrap_or("?").trim().to_string()
            })
            .collect()
    }

    /// Server `id`'s `srvr` Mode (`leader`, `follower`), or `None` when it does not serve.
    pub fn mode(&self, id: u64) -> Option<String> {
        let a = self.addrs[id as usize - 1];
        let srvr = net::four_letter_word(a, "srvr", Duration::from_secs(2)).ok()?;
        srvr.lines().find_map(|l| l.strip_prefix("Mode: ")).map(|m| m.trim().to_string())
    }

    /// The ensemble's directory (one conf, data dir and log per server).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl ClusterControl for ZooKeeperEnsemble {
    fn ids(&self) -> Vec<u64> {
        (1..=self.addrs.len() as u64).collect()
    }

    fn addr(&self, id: u64) -> SocketAddr {
        self.addrs[id as usize - 1]
    }

    fn is_running(&mut self, id: u64) -> bool {
        self.servers[id as usize - 1].as_mut().is_some_and(|s| s.exited().is_none())
    }

    fn await_leader(&mut self, within: Duration) -> Result<u64, String> {
        let until = Instant::now() + within;
        loop {
            let running: Vec<u64> = self.ids().into_iter().filter(|i| self.is_running(*i)).collect();
            let modes: Vec<(u64, Option<String>)> = running.iter().map(|i| (*i, self.mode(*i))).collect();
            let leaders: Vec<u64> =
                modes.iter().filter(|(_, m)| m.as_deref() == Some("leader")).map(|(i, _)| *i).collect();
            if leaders.len() == 1 && modes.iter().all(|(_, m)| matches!(m.as_deref(), Some("leader" | "follower"))) {
                return Ok(leaders[0]);
            }
            if Instant::now() > until {
                return Err(format!("no single ZooKeeper leader within {within:?}: {modes:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill(&mut self, id: u64) {
        self.kill_server(id);
    }

    fn restart(&mut self, id: u64) -> Result<(), String> {
        self.restart_server(id)
    }

    fn describe(&mut self) -> String {
        (0..self.servers.len()).map(|i| self.describe_one(i, 20)).collect::<Vec<_>>().join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::require_external;

    #[test]
    fn three_servers_form_one_ensemble() {
        require_external!("Debian ZooKeeper", env::zookeeper_installed());
        let zk = ZooKeeperEnsemble::start().unwrap_or_else(|e| panic!("{e}"));
        let mut modes = zk.modes();
        modes.sort();
        assert_eq!(modes, ["follower", "follower", "leader"], "{}", zk.connect_string());
        // A failure's story leaves out the tests' own polling, which would otherwise fill the
        // tail of every log.
        let mut zk = zk;
        for _ in 0..30 {
            for a in zk.addrs().to_vec() {
                let _ = net::four_letter_word(a, "mntr", Duration::from_secs(2));
            }
        }
        let story = zk.describe();
        assert!(!story.contains("Processing mntr command"), "{story}");
        assert_eq!(story.matches("(without the tests' polling)").count(), 3, "{story}");
        assert!(story.lines().count() > 3 * 10, "each log keeps a story: {story}");
        let pids: Vec<u32> = zk.servers.iter().flatten().map(ServerChild::pid).collect();
        drop(zk);
        for pid in pids {
            let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            assert!(!cmdline.contains("QuorumPeerMain"), "ZooKeeper pid {pid} survived drop");
        }
    }
}
