//! The driver's half of the read gate (`cluster/read_gate.rs`): when this node comes to follow
//! a leader (after a start, an election, or a partition that healed) or wakes from a pause
//! longer than an election timeout, it asks the leader how far its log goes, as a
//! zookeeper-flavor `sync` does, and keeps asking until it hears. The engine serves no read
//! until it has applied that far.

// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use super::super::events::Gate;
use super::super::message::Msg;
use super::super::{Event, Role};
use super::Driver;

/// Gate asks share `SyncAsk`/`SyncAnswer` with clients' syncs; this bit tells them apart (a
/// client sync's id counts up from 1 and never reaches it).
pub(super) const GATE_BIT: u64 = 1 << 63;

/// A gate ask in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asking {
    pub id: u64,
    pub at: Instant,
}

impl Driver {
    /// After a role change, the gate the engine takes with it (in the same event, so no read
    /// slips between the two): a follower with a leader closes the gate and asks; any other
    /// role opens it.
    pub(super) fn gate_on_role(&mut self) -> Gate {
        if self.role == Role::Follower && self.leader != 0 {
            self.close_gate(false)
        } else {
            self.gate = None;
            Gate::Open
        }
    }

    /// Closes the gate under a new id and asks the leader; `drop_clients`: the zookeeper
    /// flavor's clients are disconnected, as by a ZooKeeper follower whose leader link timed
    /// out (a role change has already done that where it had to).
    pub(super) fn close_gate(&mut self, drop_clients: bool) -> Gate {
        if self.disk_low {
            // It takes no entries, so it would never catch up: closed until there is room
            // (`driver/disk.rs` asks then).
            self.gate = None;
            return Gate::Close { id: 0, drop_clients };
        }
        self.next_gate += 1;
        let id = GATE_BIT | self.next_gate;
        self.gate = Some(Asking { id, at: Instant::now() });
        // The answer comes back through this driver, so the engine sees it after the close.
        self.net.send(self.id, self.leader, Msg::SyncAsk { id });
        Gate::Close { id, drop_clients }
    }

    /// Each tick: a follower whose ticks stopped for longer than an election timeout (a
    /// paused process, a starved machine) may have missed entries, so it closes the gate
    /// again; a gate ask unanswered for an election timeout is asked again (the ask or its
    /// answer may be lost).
    pub(super) fn gate_on_tick(&mut self, slept: std::time::Duration) {
        let now = Instant::now();
        if self.role == Role::Follower && self.leader != 0 && slept > self.election_timeout {
            let gate = self.close_gate(true);
            self.emit(Event::Gate(gate));
            return;
        }
        let timeout = self.election_timeout;
        if let Some(g) = self.gate.as_mut().filter(|g| now.duration_since(g.at) > timeout) {
            g.at = now;
            let id = g.id;
            if self.leader != 0 {
                self.net.send(self.id, self.leader, Msg::SyncAsk { id });
            }
        }
    }

    /// The leader answered a sync ask; true if it was a gate's (handled here).
    pub(super) fn gate_answered(&mut self, id: u64, index: u64) -> bool {
        if id & GATE_BIT == 0 {
            return false;
        }
        if self.gate.is_some_and(|g| g.id == id) {
            self.gate = None;
            self.emit(Event::GateAnswered { id, index });
        }
        true
    }
}
