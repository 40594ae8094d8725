//! `TestKeeperCluster`: n nodes in one process, each with its own client port, over the
//! in-memory network, with every fault a test wants: kill, restart, pause, partitions, and
//! per-link drop, delay, jitter and duplication, all drawn from one printed seed.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::time::Duration;
//! use testkeeper_server::{config::ServerConfig, core::flavor::Flavor};
//! use testkeeper_server::cluster::embed::TestKeeperCluster;
//! let mut cluster = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), 7).await?;
//! let leader = cluster.await_leader(Duration::from_secs(5)).await?;
//! println!("connect to {} (leader is node {leader})", cluster.connect_string());
//! cluster.kill(leader).await;
//! cluster.await_leader(Duration::from_secs(5)).await?;
//! cluster.restart(leader).await?;
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use super::net::mem::{LinkFaults, MemNet};
use super::node::Node;
use super::{ClusterConfig, NodeId, NodeStatus, Role};
use crate::clock::Clock;
use crate::config::{LogBackend, ServerConfig};
use crate::log::sim::SimDisk;

mod faults;

pub use faults::FaultError;

/// Where a simulation's clock starts (2026-01-01T00:00:00Z): a fixed time, so that every
/// replay of a seed writes the same times into its entries and digests.
const SIM_EPOCH_MS: i64 = 1_767_225_600_000;

/// A node's fixed identity across restarts: its config and client address.
struct Slot {
    cfg: ServerConfig,
    cc: ClusterConfig,
    /// The node's clock (in a simulation, with a wall-clock step of its own).
    clock: Clock,
    node: Option<Node>,
}

/// A cluster of embedded nodes.
pub struct TestKeeperCluster {
    net: MemNet,
    slots: BTreeMap<NodeId, Slot>,
    seed: u64,
    /// Without a data directory, each node's "disk" is a simulated one (its Raft log and hard
    /// state survive a kill, as Raft requires, and a kill loses what was not synced) with
    /// snapshots in this temporary directory.
    _scratch: Option<tempfile::TempDir>,
}

impl TestKeeperCluster {
    /// Starts `n` nodes (ids 1..=n) on free loopback ports, each configured as `cfg` (with a
    /// data directory `cfg.data_dir/node-N` when `cfg.data_dir` is set). Every random choice
    /// (election timeouts, link faults) comes from `seed`.
    ///
    /// # Errors
    /// A port cannot be bound, or a data directory does not recover.
    pub async fn start(n: usize, cfg: ServerConfig, seed: u64) -> io::Result<TestKeeperCluster> {
        Self::start_with_tick(n, cfg, seed, ClusterConfig::new(0, BTreeMap::new()).tick_ms).await
    }

    /// [`start`](Self::start) with a Raft tick of `tick_ms` instead of the default: the election
    /// timeout scales with it (`--raft-tick-ms`). A test whose nodes run slowly (a debug build
    /// catching up a large log) keeps its elections for real failures with a longer tick.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with_tick(
        n: usize,
        cfg: ServerConfig,
        seed: u64,
        tick_ms: u64,
    ) -> io::Result<TestKeeperCluster> {
        let net = MemNet::new(seed);
        // Inside a simulation (`testkeeper sim`) every node runs on the simulation's thread and
        // clock: drivers as tasks, time from the paused runtime, from the same start in every
        // replay.
        let simulated = testkeeper_wire::net::sim::active();
        let clock = if simulated { Clock::runtime(SIM_EPOCH_MS) } else { Clock::System };
        let peers: BTreeMap<NodeId, String> = (1..=n as u64).map(|i| (i, format!("memory:{i}"))).collect();
        let scratch = if cfg.data_dir.is_none() { Some(tempfile::tempdir()?) } else { None };
        let mut slots = BTreeMap::new();
        for id in 1..=n as u64 {
            let mut c = cfg.clone();
            c.listen = "127.0.0.1:0".parse().expect("static address");
            c.seed = seed ^ id;
            c.data_dir = cfg.data_dir.as_ref().map(|d| d.join(format!("node-{id}")));
            if let Some(s) = &scratch {
                c.data_dir = Some(s.path().join(format!("node-{id}")));
                c.log_backend = LogBackend::Sim(SimDisk::with_broken(cfg.broken));
            }
            let mut cc = ClusterConfig::new(id, peers.clone());
            cc.seed = ClusterConfig::node_seed(seed, id);
            cc.tick_ms = tick_ms;
            if simulated {
                cc.driver_runtime = Some(tokio::runtime::Handle::current());
            }
            slots.insert(id, Slot { cfg: c, cc, clock: clock.with_own_skew(), node: None });
        }
        // The node that stands for election at once starts last: started first, its first
        // call for votes reached no peer (messages to a node not started yet are lost), and
        // the election waited for its next early call, two ticks later.
        let mut order: Vec<NodeId> = slots.keys().copied().collect();
        order.sort_by_key(|id| !super::timing::early_campaigns(&slots[id].cc).is_empty());
        let mut cluster = TestKeeperCluster { net, slots, seed, _scratch: scratch };
        for id in order {
            cluster.restart(id).await?;
        }
        Ok(cluster)
    }

    /// The seed every random choice came from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Ids of every node, running or not.
    pub fn ids(&self) -> Vec<NodeId> {
        self.slots.keys().copied().collect()
    }

    /// `host:port,host:port,...` of every node, as ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.slots.values().map(|s| s.cfg.listen.to_string()).collect::<Vec<_>>().join(",")
    }

    /// Node `id`'s client address.
    pub fn addr(&self, id: NodeId) -> SocketAddr {
        self.slots[&id].cfg.listen
    }

    /// The running node `id`.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.slots.get(&id).and_then(|s| s.node.as_ref())
    }

    /// Every running node's status.
    pub fn statuses(&self) -> Vec<NodeStatus> {
        self.slots.values().filter_map(|s| s.node.as_ref()).map(Node::status).collect()
    }

    /// The node that leads in the highest term, if any running node leads.
    pub fn leader(&self) -> Option<NodeId> {
        self.statuses()
            .into_iter()
            .filter(|s| s.role == Role::Leader && s.stopped.is_none())
            .max_by_key(|s| s.term)
            .map(|s| s.id)
    }

    /// Waits until a leader is known to every running node, and every follower has caught up
    /// with it (serves reads).
    ///
    /// # Errors
    /// `TimedOut` when none emerges in `within`.
    pub async fn await_leader(&self, within: Duration) -> io::Result<NodeId> {
        let until = Instant::now() + within;
        loop {
            if let Some(l) = self.leader() {
                if self.statuses().iter().filter(|s| s.stopped.is_none()).all(|s| s.leader == l && !s.catching_up) {
                    return Ok(l);
                }
            }
            if Instant::now() > until {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no leader within {within:?}: {:?}", self.statuses()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits until every running node has applied `index` and serves reads (no follower is
    /// still catching up with its leader).
    ///
    /// # Errors
    /// `TimedOut` when some node has not in `within`.
    pub async fn await_applied(&self, index: u64, within: Duration) -> io::Result<()> {
        let until = Instant::now() + within;
        loop {
            if self.statuses().iter().filter(|s| s.stopped.is_none()).all(|s| s.applied >= index && !s.catching_up) {
                return Ok(());
            }
            if Instant::now() > until {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("index {index} not applied everywhere: {:?}", self.statuses()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Kills node `id` at once (no flush, no goodbye to its clients or peers); on a simulated
    /// disk, what it had not synced is lost.
    pub async fn kill(&mut self, id: NodeId) {
        self.crash(id, false).await;
    }

    /// [`kill`](Self::kill), and with `torn` the first record the disk had not synced survives
    /// cut in half, as a write torn by a power cut (recovery must drop it).
    pub async fn crash(&mut self, id: NodeId, torn: bool) {
        self.net.detach(id);
        let Some(slot) = self.slots.get_mut(&id) else { return };
        if let Some(node) = slot.node.take() {
            node.stop(true).await;
            if let LogBackend::Sim(disk) = &slot.cfg.log_backend {
                disk.crash(torn);
            }
        }
    }

    /// Starts node `id` again on its address (from its data directory, or empty in memory:
    /// then it catches up from the leader's log or snapshot).
    ///
    /// # Errors
    /// The address cannot be bound again, or the data directory does not recover.
    pub async fn restart(&mut self, id: NodeId) -> io::Result<()> {
        self.kill(id).await;
        let slot =
            self.slots.get_mut(&id).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no node {id}")))?;
        let net = self.net.clone();
        let attach_net = self.net.clone();
        let node = Node::start(slot.cfg.clone(), &slot.cc, slot.clock.clone(), Arc::new(net), move |id, tx| {
            attach_net.attach(id, tx)
        })
        .await?;
        slot.cfg.listen = node.addr();
        slot.node = Some(node);
        Ok(())
    }

    /// Freezes node `id` (its Raft driver neither ticks nor reads) until [`resume`](Self::resume).
    pub fn pause(&self, id: NodeId) {
        if let Some(n) = self.node(id) {
            n.pause(true);
        }
    }

    /// Thaws a paused node.
    pub fn resume(&self, id: NodeId) {
        if let Some(n) = self.node(id) {
            n.pause(false);
        }
    }

    /// Cuts every link between nodes in different groups, e.g. `&[&[1], &[2, 3]]`.
    pub fn partition(&self, groups: &[&[NodeId]]) {
        self.net.partition(groups);
    }

    /// Cuts node `id` off from every other node.
    pub fn isolate(&self, id: NodeId) {
        let others: Vec<NodeId> = self.ids().into_iter().filter(|n| *n != id).collect();
        self.net.partition(&[&[id], &others]);
    }

    /// Faults (a simulation's latency, say) on every link without faults of its own; kept
    /// by [`heal`](Self::heal).
    pub fn set_default_link(&self, faults: LinkFaults) {
        self.net.set_default_link(faults);
    }

    /// Restores every link and removes every link fault.
    pub fn heal(&self) {
        self.net.heal();
    }

    /// Faults on the link `from -> to` (drop, delay, jitter, duplicate), drawn from the seed.
    pub fn set_link(&self, from: NodeId, to: NodeId, faults: LinkFaults) {
        self.net.set_link(from, to, faults);
    }

    /// Ids of the sessions the running nodes know, ordered (each node knows every session).
    pub fn sessions(&self) -> Vec<i64> {
        let mut all: Vec<i64> = (self.slots.values().filter_map(|s| s.node.as_ref()))
            .flat_map(|n| n.shared().engine().state().sessions().keys().copied().collect::<Vec<_>>())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Expires session `id` now, as its timeout would: the first running node that knows it
    /// proposes its end through the log. Returns whether one did.
    pub fn expire_session(&self, id: i64) -> bool {
        (self.slots.values().filter_map(|s| s.node.as_ref())).any(|n| n.shared().engine().end_session(id))
    }

    /// Stops every node cleanly.
    pub async fn shutdown(mut self) {
        for id in self.ids() {
            if let Some(node) = self.slots.get_mut(&id).and_then(|s| s.node.take()) {
                node.stop(false).await;
            }
        }
        self.net.shutdown();
    }
}
