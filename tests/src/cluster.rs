//! A throwaway cluster of `testkeeper serve` processes on loopback: `n` nodes, each with its
//! own client, Raft and HTTP port (free ports, kept across restarts so a connect string stays
//! valid), started with `--id/--peers` or from one Keeper XML file (`--cluster-config`).
//! Nodes are killed (SIGKILL by PID) and restarted one by one; dropping the cluster kills
//! every node it started.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::env::testkeeper_bin;
use crate::net::free_ports;
use crate::process::ServerChild;
use crate::testkeeper::{spawn_announcing, LISTENING_PREFIX};

/// How a cluster is started.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub nodes: usize,
    /// `keeper` or `zookeeper`.
    pub flavor: String,
    /// Give every node a data directory of its own (`--data-dir`), kept across restarts.
    pub data_dirs: bool,
    /// Nodes given a data directory even without `data_dirs` (a cluster that mixes durable
    /// and in-memory nodes).
    pub durable: Vec<u64>,
    /// Start the nodes from one Keeper XML file with `--id` instead of `--peers`.
    pub config_file: bool,
    /// The run's seed (`--seed`), printed by the cluster's start.
    pub seed: u64,
    /// More `serve` flags for every node.
    pub extra: Vec<String>,
    /// A node's data directory somewhere of the test's choosing (a small filesystem) instead
    /// of under the cluster's temp dir; the node is durable.
    pub dir_of: BTreeMap<u64, PathBuf>,
}

impl ClusterOptions {
    /// Three in-memory nodes of `flavor`, started with flags, seeded from `TESTKEEPER_SEED`
    /// (default 7).
    pub fn new(flavor: &str) -> ClusterOptions {
        let seed = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
        ClusterOptions {
            nodes: 3,
            flavor: flavor.into(),
            data_dirs: false,
            durable: Vec::new(),
            config_file: false,
            seed,
            extra: Vec::new(),
            dir_of: BTreeMap::new(),
        }
    }
}

#[derive(Debug)]
struct Slot {
    client: SocketAddr,
    http: SocketAddr,
    args: Vec<String>,
    child: Option<ServerChild>,
    /// The temp dir of the last start (its log), kept after a kill for `log_tail`.
    last: Option<TempDir>,
}

/// A running cluster of `testkeeper serve` processes.
#[derive(Debug)]
pub struct TestkeeperCluster {
    slots: BTreeMap<u64, Slot>,
    dir: TempDir,
}

impl TestkeeperCluster {
    /// Starts every node and waits for each to print its listening line (not for a leader:
    /// see [`await_leader`](Self::await_leader)).
    ///
    /// # Errors
    /// A node that does not come up; the message carries its log tail.
    pub fn start(o: &ClusterOptions) -> Result<TestkeeperCluster, String> {
        eprintln!("cluster seed {} (TESTKEEPER_SEED={} replays it)", o.seed, o.seed);
        // A port free when chosen can be taken by another test before the node binds it;
        // then the whole cluster starts again on fresh ports.
        let mut attempt = 1;
        loop {
            match Self::start_on_fresh_ports(o) {
                Err(e) if attempt < 3 && e.contains("Address already in use") => {
                    eprintln!("cluster start attempt {attempt}: a port was taken, starting on fresh ports");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn start_on_fresh_ports(o: &ClusterOptions) -> Result<TestkeeperCluster, String> {
        let dir = tempfile::Builder::new().prefix("testkeeper-cluster-").tempdir().map_err(|e| e.to_string())?;
        let lo = |p: u16| SocketAddr::from((Ipv4Addr::LOCALHOST, p));
        let ids: Vec<u64> = (1..=o.nodes as u64).collect();
        // Raft, client and HTTP port per node, all different.
        let mut ports = free_ports(3 * ids.len()).into_iter();
        let mut port = move || ports.next().expect("three ports per node");
        let raft: BTreeMap<u64, u16> = ids.iter().map(|i| (*i, port())).collect();
        let peers: Vec<String> = raft.iter().map(|(i, p)| format!("{i}=127.0.0.1:{p}")).collect();
        let file = dir.path().join("keeper_config.xml");
        if o.config_file {
            std::fs::write(&file, keeper_xml(&raft)).map_err(|e| format!("writing {}: {e}", file.display()))?;
        }
        let mut slots = BTreeMap::new();
        for id in ids {
            let (client, http) = (lo(port()), lo(port()));
            let mut args: Vec<String> = vec!["serve".into(), "--flavor".into(), o.flavor.clone()];
            args.extend(["--id".into(), id.to_string()]);
            if o.config_file {
                args.extend(["--cluster-config".into(), file.display().to_string()]);
            } else {
                args.extend(["--peers".into(), peers.join(",")]);
            }
            args.extend(["--listen".into(), client.to_string(), "--http".into(), http.to_string()]);
            args.extend(["--seed".into(), o.seed.to_string()]);
            if let Some(d) = o.dir_of.get(&id) {
                args.extend(["--data-dir".into(), d.display().to_string()]);
            } else if o.data_dirs || o.durable.contains(&id) {
                args.extend(["--data-dir".into(), dir.path().join(format!("node-{id}")).display().to_string()]);
            }
            args.extend(o.extra.iter().cloned());
            slots.insert(id, Slot { client, http, args, child: None, last: None });
        }
        let mut c = TestkeeperCluster { slots, dir };
        for id in c.ids() {
            c.restart(id)?;
        }
        Ok(c)
    }

    /// Node ids, 1..=n.
    pub fn ids(&self) -> Vec<u64> {
        self.slots.keys().copied().collect()
    }

    /// `host:port,...` of every node, as clients take it.
    pub fn connect_string(&self) -> String {
        self.slots.values().map(|s| s.client.to_string()).collect::<Vec<_>>().join(",")
    }

    /// Node `id`'s client address.
    pub fn addr(&self, id: u64) -> SocketAddr {
        self.slots[&id].client
    }

    /// Node `id`'s admin HTTP address.
    pub fn http(&self, id: u64) -> SocketAddr {
        self.slots[&id].http
    }

    /// The cluster's directory (the config file, data directories).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The `serve` arguments node `id` runs with.
    pub fn args(&self, id: u64) -> &[String] {
        &self.slots[&id].args
    }

    /// Whether node `id`'s process is alive.
    pub fn is_running(&mut self, id: u64) -> bool {
        self.slots.get_mut(&id).and_then(|s| s.child.as_mut()).is_some_and(|c| c.exited().is_none())
    }

    /// Kills node `id` (SIGKILL by PID) and reaps it.
    pub fn kill(&mut self, id: u64) {
        if let Some(s) = self.slots.get_mut(&id) {
            s.child = None;
        }
    }

    /// Starts node `id` again (killing it first if it runs), on the same ports.
    ///
    /// # Errors
    /// The process does not come up; the message carries its log tail.
    pub fn restart(&mut self, id: u64) -> Result<(), String> {
        self.kill(id);
        let slot = self.slots.get_mut(&id).ok_or_else(|| format!("no node {id}"))?;
        let args: Vec<&str> = slot.args.iter().map(String::as_str).collect();
        let (child, addr, dir) = spawn_announcing(&testkeeper_bin(), &args, LISTENING_PREFIX)?;
        if addr != slot.client {
            return Err(format!("node {id} announced {addr}, not {}", slot.client));
        }
        (slot.child, slot.last) = (Some(child), Some(dir));
        Ok(())
    }

    /// Node `id`'s `mntr`, as `key -> value` (`None` when it does not answer, or answers
    /// that it is not serving).
    pub fn mntr(&self, id: u64) -> Option<BTreeMap<String, String>> {
        crate::cluster_control::mntr(self.addr(id))
    }

    /// Node `id`'s `zk_server_state`.
    pub fn role(&self, id: u64) -> Option<String> {
        self.mntr(id)?.remove("zk_server_state")
    }

    /// Waits until exactly one running node leads and every other running node follows.
    ///
    /// # Errors
    /// No such state within `within`; the message has every node's role and log tail.
    pub fn await_leader(&mut self, within: Duration) -> Result<u64, String> {
        let until = Instant::now() + within;
        loop {
            let running: Vec<u64> = self.ids().into_iter().filter(|i| self.is_running(*i)).collect();
            let roles: Vec<(u64, Option<String>)> = running.iter().map(|i| (*i, self.role(*i))).collect();
            let leaders: Vec<u64> =
                roles.iter().filter(|(_, r)| r.as_deref() == Some("leader")).map(|(i, _)| *i).collect();
            if leaders.len() == 1 && roles.iter().all(|(_, r)| matches!(r.as_deref(), Some("leader" | "follower"))) {
                return Ok(leaders[0]);
            }
            if Instant::now() > until {
                return Err(format!("no single leader within {within:?}: {roles:?}\n{}", self.describe(15)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `within` for node `id`'s process to exit by itself.
    pub fn wait_exit(&mut self, id: u64, within: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + within;
        loop {
            if let Some(st) = self.slots.get_mut(&id).and_then(|s| s.child.as_mut()).and_then(ServerChild::exited) {
                return Some(st);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last `n` lines of node `id`'s output (of its last start).
    pub fn log_tail(&self, id: u64, n: usize) -> String {
        let slot = &self.slots[&id];
        match (&slot.child, &slot.last) {
            (Some(c), _) => c.log_tail(n),
            (None, Some(d)) => crate::process::tail_lines(&d.path().join("testkeeper.log"), n),
            (None, None) => String::new(),
        }
    }

    /// Every node's state and log tail, for failure messages.
    pub fn describe(&mut self, n: usize) -> String {
        let mut s = String::new();
        for id in self.ids() {
            let up = if self.is_running(id) { "running" } else { "down" };
            let _ = writeln!(s, "--- node {id} ({up}), last {n} lines:\n{}", self.log_tail(id, n));
        }
        s
    }

    /// The Keeper XML the nodes were started from, if any.
    pub fn config_file(&self) -> Option<PathBuf> {
        let f = self.dir.path().join("keeper_config.xml");
        f.is_file().then_some(f)
    }
}

/// A Keeper configuration with this `raft_configuration` and fast test timings.
fn keeper_xml(raft: &BTreeMap<u64, u16>) -> String {
    let servers: String = raft
        .iter()
        .map(|(i, p)| format!("      <server><id>{i}</id><hostname>127.0.0.1</hostname><port>{p}</port></server>\n"))
        .collect();
    format!(
        "<clickhouse>\n  <keeper_server>\n    <tcp_port>9181</tcp_port>\n    <server_id>1</server_id>\n    \
         <digest_enabled>true</digest_enabled>\n    <coordination_settings>\n      \
         <heart_beat_interval_ms>40</heart_beat_interval_ms>\n      \
         <election_timeout_lower_bound_ms>200</election_timeout_lower_bound_ms>\n      \
         <election_timeout_upper_bound_ms>400</election_timeout_upper_bound_ms>\n    </coordination_settings>\n    \
         <raft_configuration>\n{servers}    </raft_configuration>\n  </keeper_server>\n</clickhouse>\n"
    )
}

/// Connects to cluster node `addr` for a new session, waiting up to `within` for it to take
/// one. A keeper-flavor node that knows no leader at that moment (it was just restarted, or a
/// term is changing) answers the handshake as Keeper does, with session 0, which the client
/// reads as an expired session; and when the new session's entry fails on its way through the
/// leader, the node closes the connection unanswered. Keeper's own clients try again after
/// either, and so does this, saying so each time. Any other error is returned at once.
pub async fn connect_new_session(
    addr: SocketAddr,
    within: Duration,
) -> Result<testkeeper_wire::client::Client, testkeeper_wire::client::ClientError> {
    use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
    let until = Instant::now() + within;
    loop {
        match Client::connect(addr, ConnectOptions::default()).await {
            Err(e @ (ClientError::SessionExpired | ClientError::Connect(_))) if Instant::now() < until => {
                eprintln!("{addr}: no new session there yet ({e}); retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}
