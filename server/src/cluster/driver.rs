//! One node's Raft driver: the one owner of `RawNode` and its storage, on a thread of its own
//! or as a task on a runtime (`ClusterConfig::driver_runtime`). It ticks,
//! steps messages, handles every `Ready` in raft-rs's documented order (messages, snapshot,
//! committed entries, append with the hard state, flush, persisted messages, advance, the
//! light ready, advance_apply), and, while it leads, decides proposals with the proposer and
//! proposes them. Every proposal is answered through the engine: the entry's origin names who
//! waits, and a proposal that cannot be placed is refused with the error Keeper gives.
//!
//! # Layout
//! - this file: the thread or task, its loop, and the inputs it steps (peers' messages,
//!   proposals).
//! - `dedup`: forwarded proposals seen, so a copy is not proposed twice.
//! - `disk`: a disk below its margin: writes refused, leadership handed on, entries dropped.
//! - `gate`: asking the leader how far to catch up before this follower serves reads.
//! - `handle`: the running driver's handle: its input channel, stopping it.
//! - `inbox`: what peers send (raft-rs's messages and ours), and raft-rs's messages out.
//! - `propose`: proposals, forwarding, deciding as the leader, refusals, `sync`, transfers.
//! - `ready`: one `Ready` in raft-rs's order; snapshots installed, entries applied.
//! - `role`: role changes, the periodic tick, the Raft picture published to the engine.

mod ahead;
mod dedup;
mod disk;
mod gate;
mod handle;
mod inbox;
mod propose;
mod ready;
mod role;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use raft::RawNode;
use testkeeper_core::propose::{Proposal, Proposer};
use testkeeper_core::txn::Entry;
use tracing::{error, warn};

use super::message::Msg;
use super::net::Transport;
use super::store::RaftStore;
use super::{ClusterConfig, Input, NodeId, Role};
use crate::engine::Shared;
pub use handle::DriverHandle;
use handle::Runs;

/// How long a proposal may wait for a leader before it fails (Keeper's operation_timeout_ms).
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The driver of one node.
pub struct Driver {
    id: NodeId,
    peers: Vec<NodeId>,
    node: RawNode<RaftStore>,
    net: Arc<dyn Transport>,
    shared: Weak<Shared>,
    rx: flume::Receiver<Input>,
    tick: Duration,
    /// The proposer, while this node leads and has applied everything before its term.
    proposer: Option<Proposer>,
    /// The index of this leader's first entry: proposals wait until it is applied.
    lead_start: u64,
    role: Role,
    leader: NodeId,
    term: u64,
    /// Proposals waiting for a leader (or for this leader to be ready), with when they came.
    parked: VecDeque<(Instant, u64, i64, Proposal)>,
    /// Origins of this node's proposals in flight, with the term they were sent in and when:
    /// a new term fails them, and so does the operation timeout (their outcome is unknown).
    /// Ordered, so that they fail in the same order in every replay of a simulation.
    in_flight: BTreeMap<u64, (u64, Instant)>,
    /// zookeeper-flavor syncs asked of the leader.
    syncs: VecDeque<u64>,
    /// Set by the harness: the driver does nothing (a paused process) until it is cleared.
    paused: Arc<AtomicBool>,
    /// The highest commit index the leader has sent this node (lgif's leader_committed_log_idx).
    leader_commit: u64,
    /// Keeper's `stale_log_gap`, for the synced-follower count.
    stale_log_gap: u64,
    /// The deliberately broken `forget-acked-on-leader-change` mode, while this node leads.
    early: Option<super::broken::EarlyAck>,
    /// Ticks at which this node stands for election without waiting for its timeout: a fresh
    /// cluster's first node in the election order does (`timing::early_campaigns`).
    early_campaigns: Vec<u64>,
    ticks: u64,
    /// Whether this node appends (and flushes) a `Ready`'s entries before sending its messages.
    stored_first: bool,
    /// Entries to apply on the proof that the leader holds them (`driver/ahead.rs`).
    ahead: ahead::Ahead,
    /// This leader's entries as it decided them, in index order, until they are applied: the
    /// leader applies these rather than decoding the copies raft-rs hands back (decoding was
    /// 5% of a leader's CPU in `perf record` while `ON=all scripts/cluster-processes-bench.sh
    /// BIN 32` wrote). An entry is used only where index and term match.
    decided: VecDeque<Entry>,
    /// Origins of the forwarded proposals this node received, to drop copies.
    forwarded: dedup::Seen,
    /// This node's election timeout, and when it last ticked: a longer gap closes the gate.
    election_timeout: Duration,
    last_tick: Instant,
    /// The read gate's ask in flight, and the last gate id used (`driver/gate.rs`).
    gate: Option<gate::Asking>,
    next_gate: u64,
    /// The disk guard's last answer (`driver/disk.rs`), and whether this low episode's
    /// leadership hand-off is done.
    disk_low: bool,
    handed_off: bool,
}

/// Why a driver did not start.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// raft-rs refused the node's configuration (`cluster/timing.rs`).
    #[error("raft configuration: {0}")]
    Config(raft::Error),
    /// raft-rs refused to build the node over its storage.
    #[error("raft node: {0}")]
    Node(raft::Error),
    #[error("spawning the raft thread: {0}")]
    Thread(std::io::Error),
}

/// Starts node `cfg.id`'s driver over `store`, applying to the engine behind `shared` (whose
/// state is at `applied`).
///
/// # Errors
/// raft-rs refuses the configuration or the storage.
pub fn spawn(
    cfg: &ClusterConfig,
    mut store: RaftStore,
    applied: u64,
    net: Arc<dyn Transport>,
    shared: &Arc<Shared>,
    tx: flume::Sender<Input>,
    rx: flume::Receiver<Input>,
) -> Result<DriverHandle, DriverError> {
    // Entries applied on the leader's stored copy before a restart are committed.
    store.commit_at_least(applied);
    let stored_first = store.stored_before_sending();
    // With the leader, a follower is a majority only among three voters or fewer.
    let ahead_on = cfg.peers.len() <= 3;
    let mut rc = super::timing::raft_config(cfg, applied);
    // Followers that apply on the leader's stored copy have no use for the append a leader
    // sends only to say that its commit index moved (`driver/ahead.rs`); the next append or
    // heartbeat carries the index anyway.
    rc.skip_bcast_commit = stored_first && ahead_on;
    rc.validate().map_err(DriverError::Config)?;
    let node = RawNode::new(&rc, store, &super::logger::logger(cfg.id)).map_err(DriverError::Node)?;
    let fresh = node.raft.term == 0 && node.raft.raft_log.last_index() == 0;
    let ahead = ahead::Ahead::new(ahead_on);
    let early_campaigns = if fresh { super::timing::early_campaigns(cfg) } else { Vec::new() };
    let d = Driver {
        id: cfg.id,
        peers: cfg.peers.keys().copied().collect(),
        node,
        net,
        shared: Arc::downgrade(shared),
        rx,
        tick: Duration::from_millis(cfg.tick_ms.max(1)),
        proposer: None,
        lead_start: 0,
        role: Role::Follower,
        leader: 0,
        term: 0,
        parked: VecDeque::new(),
        in_flight: BTreeMap::new(),
        syncs: VecDeque::new(),
        paused: Arc::new(AtomicBool::new(false)),
        leader_commit: 0,
        stale_log_gap: cfg.stale_log_gap,
        early: None,
        early_campaigns,
        ticks: 0,
        stored_first,
        ahead,
        decided: VecDeque::new(),
        forwarded: dedup::Seen::default(),
        election_timeout: Duration::from_millis(cfg.tick_ms.max(1))
            * u32::try_from(rc.election_tick).unwrap_or(u32::MAX),
        last_tick: Instant::now(),
        gate: None,
        next_gate: 0,
        disk_low: false,
        handed_off: false,
    };
    // The engine reports the log as it is from the start (a recovered node's applied index
    // is already in it), not zeros until the first tick.
    d.publish();
    let paused = d.paused.clone();
    let runs = if let Some(rt) = &cfg.driver_runtime {
        Runs::Task(rt.spawn(d.run_as_task()))
    } else {
        let thread = std::thread::Builder::new()
            .name(format!("testkeeper-raft-{}", cfg.id))
            .spawn(move || d.run())
            .map_err(DriverError::Thread)?;
        Runs::Thread(thread)
    };
    Ok(DriverHandle { tx, paused, runs })
}

/// What woke the driver.
// Lives for one turn on the stack; boxing the input would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
enum Woke {
    Input(Input),
    Timeout,
    Closed,
}

impl Driver {
    /// The driver on its own thread.
    fn run(mut self) {
        let mut next_tick = Instant::now() + self.tick;
        if !self.start() {
            return;
        }
        loop {
            if self.paused.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
                next_tick = Instant::now() + self.tick;
                continue;
            }
            let wait = next_tick.saturating_duration_since(Instant::now());
            let woke = match self.rx.recv_timeout(wait) {
                Ok(input) => Woke::Input(input),
                Err(flume::RecvTimeoutError::Timeout) => Woke::Timeout,
                Err(flume::RecvTimeoutError::Disconnected) => Woke::Closed,
            };
            if !self.turn(woke, &mut next_tick) {
                return;
            }
        }
    }

    /// The driver as a task: the same turns, but a message from a peer (read by a task on the
    /// same runtime) reaches it without waking another thread, and its own messages go out the
    /// same way (on a machine with few cores, those hand-offs were most of a replicated
    /// write's cost).
    async fn run_as_task(mut self) {
        let mut next_tick = Instant::now() + self.tick;
        if !self.start() {
            return;
        }
        loop {
            if self.paused.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(5)).await;
                next_tick = Instant::now() + self.tick;
                continue;
            }
            let woke = match tokio::time::timeout_at(next_tick, self.rx.recv_async()).await {
                Ok(Ok(input)) => {
                    if self.batching() {
                        tokio::task::yield_now().await;
                    }
                    Woke::Input(input)
                }
                Err(_) => Woke::Timeout,
                Ok(Err(_)) => Woke::Closed,
            };
            if !self.turn(woke, &mut next_tick) {
                return;
            }
            // A driver whose input never runs dry would otherwise keep its worker from the
            // clients' tasks queued behind it: yield once its share of the scheduler is spent.
            tokio::task::coop::consume_budget().await;
        }
    }

    /// Whether requests besides the one that woke the driver are waiting on this node (its
    /// sessions' forwarded proposals, or entries this leader has not applied yet). Then the
    /// driver lets the tasks already runnable (clients' connections, peers' readers) queue
    /// their inputs before its turn, so one append, one frame per peer and one ack carry them
    /// all: with 32 sessions on three processes of a 2-core machine, a leader's frame to a peer
    /// carried about 6 writes instead of about 3, and the nodes' CPU per write fell by about
    /// a tenth. With one request in flight there is nothing to wait for, and the yield (an
    /// extra poll of the reactor) would only add latency.
    fn batching(&self) -> bool {
        let log = &self.node.raft.raft_log;
        self.in_flight.len() > 1 || (self.role == Role::Leader && log.last_index() > log.applied + 1)
    }

    fn start(&mut self) -> bool {
        self.campaign_early();
        let on = self.ready();
        self.net.flush();
        on
    }

    /// One turn of the loop: the input that woke the driver and whatever queued behind it,
    /// the tick if it is due, then the `Ready`. Returns false once the driver must stop.
    fn turn(&mut self, woke: Woke, next_tick: &mut Instant) -> bool {
        match woke {
            Woke::Input(Input::Stop) | Woke::Closed => return false,
            Woke::Input(input) => {
                self.input(input);
                // Take whatever else already queued before handling the Ready: one append
                // and one flush for many proposals.
                while let Ok(more) = self.rx.try_recv() {
                    if matches!(more, Input::Stop) {
                        return false;
                    }
                    self.input(more);
                }
            }
            Woke::Timeout => {}
        }
        let now = Instant::now();
        if now >= *next_tick {
            // Ticks missed while the driver was starved are not made up: ten catch-up ticks in
            // a row would start an election before the leader's heartbeat, already queued, is
            // read (on a loaded machine every node of an embedded cluster stalls at once, and
            // re-elected for nothing).
            *next_tick = (*next_tick + self.tick).max(now);
            let slept = now.duration_since(self.last_tick);
            self.last_tick = now;
            self.node.tick();
            self.ticks += 1;
            self.gate_on_tick(slept);
            self.campaign_early();
            self.on_tick();
        }
        let on = self.ready();
        // Everything this turn sent leaves together.
        self.net.flush();
        on
    }

    /// Stands for election now if this is one of the fresh node's early ticks and no leader
    /// is known yet (the peers may not have been listening for the tick before).
    fn campaign_early(&mut self) {
        if self.early_campaigns.first() == Some(&self.ticks) {
            self.early_campaigns.remove(0);
            if self.node.raft.leader_id == 0 {
                if let Err(e) = self.node.campaign() {
                    warn!(node = self.id, error = %e, "standing for election at start failed");
                }
            }
        }
    }

    fn input(&mut self, input: Input) {
        match input {
            Input::Propose { origin, session, proposal } => self.proposal(origin, session, proposal),
            Input::Net { from, msg } => self.message(from, msg),
            Input::SyncRequest { id } => self.sync_request(id),
            Input::TransferLeader { to } => self.transfer_leader(to),
            Input::Revalidate { session } => {
                // The engine records it itself while it leads; otherwise the leader learns it.
                if self.role != Role::Leader && self.leader != 0 {
                    self.net.send(self.id, self.leader, Msg::Revalidate { session });
                }
            }
            Input::Stop => {}
        }
    }

    fn publish(&self) {
        let info = self.info();
        if let Some(s) = self.shared.upgrade() {
            s.engine().set_raft_info(info);
        }
    }

    /// Stops this node: it logs why, stops taking part in the cluster, and the engine stops
    /// serving (the process exits non-zero; an embedded node reports why).
    fn fail(&mut self, why: String) -> bool {
        error!(node = self.id, "{why}");
        if let Some(s) = self.shared.upgrade() {
            s.engine().stop_serving(why);
        }
        false
    }
}
