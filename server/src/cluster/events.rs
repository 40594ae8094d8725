//! What a node's driver tells its engine, in one ordered stream: committed entries, the
//! leader's snapshots, role changes, refusals, answers to syncs and read-gate asks, proposals
//! for the leader to decide, and a fail-stop. One apply task per node drains the stream and is
//! the only one that takes the engine's lock for the driver; the driver itself never does
//! (docs/architecture.md, "One commit stream").
//!
//! The order is the contract both sides reason from: the engine sees a role change before any
//! entry committed after it, and a proposal handed back to decide after the entries that made
//! this leader ready (`cluster/lead.rs`), so neither side has to ask the other.

use std::sync::{Arc, Weak};

use testkeeper_core::propose::Proposal;
use testkeeper_core::txn::Entry;

use super::{NodeId, Role};
use crate::engine::{Engine, Shared};

/// Events taken under one lock of the engine at most: the replies of a batch go out
/// together, and a long stream does not keep connections from the lock for long.
const BATCH: usize = 256;

/// One event of the stream.
#[derive(Debug)]
pub(crate) enum Event {
    /// Entries committed (or proven on a majority, `driver/ahead.rs`), in index order.
    Committed(Vec<Entry>),
    /// The leader's snapshot at `index` replaces the state.
    Snapshot { body: Arc<Vec<u8>>, index: u64 },
    /// Raft's role, leader or term changed. `lead_start`: as the leader, the index of this
    /// term's first entry, which the engine applies before it decides anything.
    Role { role: Role, leader: NodeId, term: u64, lead_start: u64, gate: Gate },
    /// The read gate closes (or opens) without a role change.
    Gate(Gate),
    /// The leader answered read-gate ask `id`: its log ends at `index`.
    GateAnswered { id: u64, index: u64 },
    /// As the ready leader: decide this proposal (a follower's, or one that waited for this
    /// leader to be ready).
    Decide { origin: u64, session: i64, proposal: Proposal },
    /// The proposal of `origin` was not placed in the log: its waiter gets `code`, and a
    /// decision of this leader's proposer is taken back.
    Refused { origin: u64, code: i32 },
    /// The leader answered client sync `id`: its log ends at `index`.
    SyncAnswered { id: u64, index: u64 },
    /// A follower reported these sessions active (this node leads).
    Touch(Vec<i64>),
    /// zookeeper flavor: `session` now lives on node `node` (this node leads).
    Owner { session: i64, node: NodeId },
    /// The driver cannot go on (a log that fails, a snapshot that does not install).
    Fail(String),
}

/// What happens to the read gate (`cluster/read_gate.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// This node leads, or has no leader: reads are served.
    Open,
    /// Closed until ask `id` is answered and applied (0: asked of nobody yet);
    /// `drop_clients` disconnects the zookeeper flavor's clients.
    Close { id: u64, drop_clients: bool },
}

/// The loop that drains `rx` into the engine behind `shared`: a task of its own beside a
/// driver on a thread, or polled in the same task as a driver that is a task (one task
/// switch less per batch of events; the driver's code still never touches the engine). It
/// ends when the driver drops its sender (after draining what was sent) or the engine is gone.
pub(crate) fn apply_loop(shared: &Arc<Shared>, rx: flume::Receiver<Event>) -> ApplyLoop {
    let weak: Weak<Shared> = Arc::downgrade(shared);
    Box::pin(async move {
        while let Ok(first) = rx.recv_async().await {
            let Some(s) = weak.upgrade() else { return };
            let mut e = s.engine();
            e.on_event(first);
            for _ in 1..BATCH {
                let Ok(more) = rx.try_recv() else { break };
                e.on_event(more);
            }
        }
    })
}

/// [`apply_loop`]'s future.
pub(crate) type ApplyLoop = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

impl Engine {
    /// Handles one event of the driver's stream.
    pub(crate) fn on_event(&mut self, ev: Event) {
        if self.stop_reason.is_some() {
            // A stopped node applies nothing more; its waiters were failed as it stopped.
            return;
        }
        match ev {
            Event::Committed(entries) => self.apply_committed(entries),
            Event::Snapshot { body, index } => {
                if let Err(why) = self.install_snapshot(&body, index) {
                    self.stop_serving(format!("the leader's snapshot at index {index} does not load: {why}"));
                }
            }
            Event::Role { role, leader, term, lead_start, gate } => {
                self.role_changed(role, leader, term, lead_start);
                self.gate(gate);
            }
            Event::Gate(g) => self.gate(g),
            Event::GateAnswered { id, index } => self.read_gate_answered(id, index),
            Event::Decide { origin, session, proposal } => self.decide_handed(origin, session, proposal),
            Event::Refused { origin, code } => self.refused(origin, code),
            Event::SyncAnswered { id, index } => self.sync_answered(id, index),
            Event::Touch(sessions) => {
                for id in sessions {
                    self.touch(id);
                }
            }
            Event::Owner { session, node } => self.set_session_owner(session, node),
            Event::Fail(why) => self.stop_serving(why),
        }
    }

    /// Applies committed entries in order with the one `apply`, skipping any applied already.
    fn apply_committed(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            if entry.index() <= self.state.last_index() {
                continue;
            }
            self.commit(entry);
            if self.stop_reason.is_some() {
                return;
            }
        }
        self.lead_if_ready();
    }

    fn gate(&mut self, g: Gate) {
        match g {
            Gate::Open => self.open_read_gate(),
            Gate::Close { id, drop_clients } => self.close_read_gate(id, drop_clients),
        }
    }
}
