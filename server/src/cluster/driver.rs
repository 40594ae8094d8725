//! One node's Raft driver: the one owner of `RawNode` and its storage, on a thread of its own
//! or as a task on a runtime (`ClusterConfig::driver_runtime`). It ticks,
//! steps messages, handles every `Ready` in raft-rs's documented order (messages, snapshot,
//! committed entries, append with the hard state, flush, persisted messages, advance, the
//! light ready, advance_apply), and, while it leads, puts the entries its engine decided into
//! the log. It never takes the engine's lock: what the engine must know (committed entries,
//! snapshots, roles, refusals, answers) goes out in one ordered stream of events
//! (`cluster/events.rs`), applied by the node's apply task. Every proposal is answered
//! through the engine: the entry's origin names who waits, and a proposal that cannot be
//! placed is refused with the error Keeper gives.
//!
//! # Layout
//! - this file: the driver, its start, and the inputs it steps (peers' messages, proposals,
//!   the leader's decisions).
//! - `dedup`: forwarded proposals seen, so a copy is not proposed twice.
//! - `disk`: a disk below its margin: writes refused, leadership handed on, entries dropped.
//! - `gate`: asking the leader how far to catch up before this follower serves reads.
//! - `gone`: a follower whose leader's process is gone leaves its lease and, first in id order,
//!   stands for election at once.
//! - `handle`: the running driver's handle: its input channel, stopping it.
//! - `inbox`: what peers send (raft-rs's messages and ours), and raft-rs's messages out.
//! - `propose`: proposals, forwarding, placing the leader's decisions, refusals, `sync`,
//!   transfers.
//! - `ready`: one `Ready` in raft-rs's order; snapshots and committed entries handed on.
//! - `role`: role changes, the periodic tick, the Raft picture published to the engine.
//! - `run`: the loop, on a thread or as a task beside the engine's apply loop.

mod ahead;
mod dedup;
mod disk;
mod gate;
mod gone;
mod handle;
mod inbox;
mod propose;
mod ready;
mod role;
mod run;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use raft::RawNode;
use testkeeper_core::propose::Proposal;
use testkeeper_core::txn::Entry;
use tracing::error;

use super::message::Msg;
use super::net::Transport;
use super::store::RaftStore;
use super::{Board, ClusterConfig, Event, Input, NodeId, Role};
use crate::engine::DiskGuard;
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
    /// The ordered stream to the engine (`cluster/events.rs`).
    events: flume::Sender<Event>,
    /// What this driver publishes and collects without a message (`cluster/board.rs`).
    board: Arc<Board>,
    rx: flume::Receiver<Input>,
    tick: Duration,
    /// The index of this leader's first entry: proposals wait until it is handed to the
    /// engine, whose proposer then starts (`cluster/lead.rs`).
    lead_start: u64,
    /// This turn handed proposals to the engine to decide.
    handed_back: bool,
    /// The highest index handed to the engine to apply (committed, or on the leader's stored
    /// copy), or installed by snapshot.
    handed: u64,
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
    /// The driver's own guard of the data directory's disk (the engine has its twin), its
    /// last answer (`driver/disk.rs`), and whether this low episode's leadership hand-off is
    /// done.
    disk: Option<DiskGuard>,
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

/// What a driver works with besides its storage: its peers, and its engine's stream and board.
pub(crate) struct Wiring {
    pub net: Arc<dyn Transport>,
    pub events: flume::Sender<Event>,
    pub board: Arc<Board>,
    pub disk: Option<DiskGuard>,
    pub tx: flume::Sender<Input>,
    pub rx: flume::Receiver<Input>,
    /// The engine's apply loop, to poll in the driver's own task (task mode only).
    pub co_run: Option<super::events::ApplyLoop>,
}

/// Starts node `cfg.id`'s driver over `store`, for an engine whose state is at `applied`.
///
/// # Errors
/// raft-rs refuses the configuration or the storage.
pub(crate) fn spawn(
    cfg: &ClusterConfig,
    mut store: RaftStore,
    applied: u64,
    w: Wiring,
) -> Result<DriverHandle, DriverError> {
    let Wiring { net, events, board, disk, tx, rx, co_run } = w;
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
        events,
        board,
        rx,
        tick: Duration::from_millis(cfg.tick_ms.max(1)),
        lead_start: 0,
        handed_back: false,
        handed: applied,
        role: Role::Follower,
        leader: 0,
        term: 0,
        parked: VecDeque::new(),
        in_flight: BTreeMap::new(),
        syncs: VecDeque::new(),
        paused: Arc::new(AtomicBool::new(false)),
        leader_commit: 0,
        stale_log_gap: cfg.stale_log_gap,
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
        disk,
        disk_low: false,
        handed_off: false,
    };
    // The engine reports the log as it is from the start (a recovered node's applied index
    // is already in it), not zeros until the first tick.
    d.publish();
    let paused = d.paused.clone();
    let runs = if let Some(rt) = &cfg.driver_runtime {
        let apply = co_run.unwrap_or_else(|| Box::pin(std::future::ready(())));
        // The driver first: after its turn the apply loop takes what the turn sent it, in
        // the same poll (`run_as_task` counts on it).
        Runs::Task(rt.spawn(async move {
            tokio::join!(biased; d.run_as_task(), apply);
        }))
    } else {
        let thread = std::thread::Builder::new()
            .name(format!("testkeeper-raft-{}", cfg.id))
            .spawn(move || d.run())
            .map_err(DriverError::Thread)?;
        Runs::Thread(thread)
    };
    Ok(DriverHandle { tx, paused, runs })
}

impl Driver {
    fn input(&mut self, input: Input) {
        match input {
            Input::Propose { origin, session, proposal } => self.proposal(origin, session, proposal),
            Input::Decided { entry } => self.place(entry),
            Input::Refuse { origin, code } => self.refuse(origin, code),
            Input::PeerGone { peer } => self.peer_gone(peer),
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

    /// Whether this node leads and its engine decides yet: the term's first entry is handed
    /// on, so the engine's proposer has started (`cluster/lead.rs`).
    fn lead_ready(&self) -> bool {
        self.role == Role::Leader && self.handed >= self.lead_start
    }

    fn publish(&self) {
        self.board.publish(self.info());
    }

    /// Tells the engine something, in the stream's order. An engine that is gone (the node
    /// is stopping) hears nothing more.
    fn emit(&self, ev: Event) {
        let _ = self.events.send(ev);
    }

    /// Stops this node: it logs why, stops taking part in the cluster, and the engine stops
    /// serving (the process exits non-zero; an embedded node reports why).
    fn fail(&mut self, why: String) -> bool {
        error!(node = self.id, "{why}");
        self.emit(Event::Fail(why));
        false
    }
}
