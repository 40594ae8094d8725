//! One cluster node, assembled: its engine (recovered from its data directory up to the
//! commit index, or fresh in memory), its Raft storage over the engine's log, its driver, the
//! task that applies the driver's events to the engine, and its client listener.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::driver::{self, DriverHandle};
use super::events::apply_loop;
use super::net::Transport;
use super::store::{RaftStore, SnapRef};
use super::{Board, ClusterConfig, Input, Link, NodeId, NodeStatus, Replica};
use crate::clock::Clock;
use crate::config::ServerConfig;
use crate::engine::{Engine, Shared};
use crate::log::memory::MemLog;
use crate::storage::Replay;

/// A running node.
pub struct Node {
    pub id: NodeId,
    shared: Arc<Shared>,
    driver: DriverHandle,
    /// Applies the driver's events (`cluster/events.rs`) beside a driver on a thread; ends
    /// after the driver does. (A driver that is a task runs it in its own task.)
    apply: Option<JoinHandle<()>>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// Every member's Raft address, for the dashboard's `/dashboard/content`.
    peers: std::collections::BTreeMap<NodeId, String>,
}

impl Node {
    /// Starts node `cc.id` serving clients on `cfg.listen`, reaching its peers through `net`;
    /// `attach` receives the node's input channel (the in-memory network's endpoint).
    ///
    /// # Errors
    /// The client address cannot be bound, the data directory does not recover, or raft-rs
    /// refuses the storage.
    pub async fn start(
        cfg: ServerConfig,
        cc: &ClusterConfig,
        clock: Clock,
        net: Arc<dyn Transport>,
        attach: impl FnOnce(NodeId, flume::Sender<Input>),
    ) -> io::Result<Node> {
        let listener = crate::net::listener::Listener::bind(cfg.listen).await?;
        let addr = listener.local_addr()?;
        let mut cfg = cfg;
        cfg.listen = addr;
        let cfg = Arc::new(cfg);
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
        let (mut engine, snap) = if cfg.data_dir.is_some() {
            let (start, recovery) =
                crate::storage::open(&cfg, clock.now_ms(), Replay::Committed).map_err(|e| invalid(e.to_string()))?;
            let snap =
                recovery.snapshot.as_ref().map(|s| SnapRef { index: s.index, term: s.term, body: s.body.clone() });
            (Engine::recovered(cfg.clone(), clock, start, &recovery), snap)
        } else {
            (Engine::new(cfg.clone(), clock), None)
        };
        let log = if cfg.data_dir.is_some() {
            engine.take_log()
        } else {
            // In memory the Raft log must keep what followers still need: snapshots compact it.
            let _ = engine.take_log();
            Box::new(MemLog::new(usize::MAX, engine.state().last_index()))
        };
        let applied = engine.state().last_index();
        if let Some(tap) = &cfg.tap {
            tap.loaded(cc.id, applied, engine.state().digest(), "start");
        }
        let voters: Vec<NodeId> = cc.peers.keys().copied().collect();
        let store = RaftStore::new(log, voters, snap).map_err(|e| invalid(e.to_string()))?;
        let (tx, rx) = flume::unbounded();
        let board = Arc::new(Board::default());
        engine.join_cluster(Replica::new(Link { node: cc.id, tx: tx.clone() }, board.clone()));
        let disk = engine.disk.as_ref().map(crate::engine::DiskGuard::twin);
        let shared = Shared::new(cfg, engine);
        attach(cc.id, tx.clone());
        let (events, events_rx) = flume::unbounded();
        let apply = apply_loop(&shared, events_rx);
        // A driver that is a task runs the apply loop in its own task; one on a thread has it
        // as a task here.
        let (apply, co_run) =
            if cc.driver_runtime.is_some() { (None, Some(apply)) } else { (Some(tokio::spawn(apply)), None) };
        let wiring = driver::Wiring { net, events, board, disk, tx, rx, co_run };
        let driver =
            driver::spawn(cc, store, applied, wiring).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let (stop, _) = watch::channel(false);
        let tasks = crate::net::serve(listener, &shared, &stop);
        Ok(Node { id: cc.id, shared, driver, apply, addr, stop, tasks, peers: cc.peers.clone() })
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Role, leader, term, applied index, and why it stopped if it did.
    pub fn status(&self) -> NodeStatus {
        self.shared.engine().node_status().expect("a cluster node has a replica")
    }

    /// Entries this node applied on the proof that the leader held them too, before the
    /// leader's commit index reached them (`driver/ahead.rs`), as last published.
    pub fn applied_on_stored(&self) -> u64 {
        self.shared.engine().raft_info().map_or(0, |i| i.applied_on_stored)
    }

    /// The tree digest at this node's applied index.
    pub fn digest(&self) -> u64 {
        self.shared.engine().state().digest()
    }

    /// The digest recomputed from every node of this replica's tree.
    pub fn recompute_digest(&self) -> u64 {
        self.shared.engine().state().tree().recompute_digest()
    }

    /// The data of the znode at `path` in this replica's tree (`None`: no such node).
    pub fn data(&self, path: &str) -> Option<Vec<u8>> {
        self.shared.engine().state().tree().get(path).map(|n| n.data().to_vec())
    }

    /// Number of znodes here.
    pub fn node_count(&self) -> usize {
        self.shared.engine().state().tree().len()
    }

    /// Freezes (or thaws) the node's Raft driver, as a paused process: it neither ticks nor
    /// reads messages.
    pub fn pause(&self, paused: bool) {
        self.driver.paused.store(paused, std::sync::atomic::Ordering::Release);
    }

    /// Adds a client-path fault rule on this node (the grammar of `docs/faults.md`); returns
    /// its id.
    ///
    /// # Errors
    /// The parse error, naming the bad kind, key or value.
    pub fn add_fault(&self, rule: &str) -> Result<u64, crate::faults::RuleError> {
        self.shared.engine().faults.add(rule)
    }

    /// Starts this node's admin HTTP endpoint on `addr` (port 0 picks a free port): the routes
    /// of a standalone server, with `/ready`, `mntr` and `/metrics` answering for this node.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start_http(&self, addr: SocketAddr) -> io::Result<crate::http::HttpServer> {
        let peers = crate::http::dashboard::Peers(self.peers.clone());
        crate::http::HttpServer::start_with(addr, self.shared.clone(), peers).await
    }

    /// The engine, for the cluster harness (faults, snapshots).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the node: clean (`kill` false: the driver stops, the storage is flushed and
    /// released) or at once (`kill` true: nothing more is flushed, as a killed process).
    pub async fn stop(mut self, kill: bool) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        self.driver.stop().await;
        if let Some(apply) = self.apply.take() {
            if kill {
                // A killed process applies nothing more of what its driver had handed on.
                apply.abort();
            }
            let _ = apply.await;
        }
        if kill {
            self.shared.abandon();
        } else {
            self.shared.close();
        }
    }
}
