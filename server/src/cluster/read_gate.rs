//! The read gate: a follower serves no read until it has caught up with its leader. When it
//! comes to follow a leader (at start, after an election, after a partition heals) or wakes
//! from a long pause, its tree may be any number of entries behind; a ZooKeeper follower syncs
//! with its leader before it serves (Learner.syncWithLeader), and so does this one. The driver
//! asks the leader how far its log goes (`driver/gate.rs`); until this node has applied that
//! far, reads get CONNECTIONLOSS (keeper flavor), new connections are refused (zookeeper
//! flavor; its clients were dropped when the leader was lost), and `/ready` says not ready.
//! Writes go on: they are ordered by the leader anyway.

use tracing::info;

use crate::engine::Engine;

/// Whether a follower serves reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadGate {
    /// It does (a leader, a candidate, a follower caught up, a standalone server).
    Open,
    /// Closed: ask `id` to the leader has no answer yet.
    Asking(u64),
    /// Closed until this node has applied the entry at this index.
    Until(u64),
}

impl Engine {
    /// Whether this node is a follower still catching up with its leader.
    pub(crate) fn catching_up(&self) -> bool {
        self.seq.replica().is_some_and(|r| r.gate != ReadGate::Open)
    }

    /// Closes the gate until ask `id` is answered and applied; `drop_clients` disconnects the
    /// zookeeper flavor's clients too.
    pub(crate) fn close_read_gate(&mut self, id: u64, drop_clients: bool) {
        let Some(r) = self.seq.replica_mut() else { return };
        r.gate = ReadGate::Asking(id);
        if drop_clients {
            self.drop_zookeeper_clients();
        }
    }

    /// Opens the gate: this node leads, or has no leader (then no read is served anyway).
    pub(crate) fn open_read_gate(&mut self) {
        if let Some(r) = self.seq.replica_mut() {
            r.gate = ReadGate::Open;
        }
    }

    /// The leader answered ask `id`: its log ends at `index`.
    pub(crate) fn read_gate_answered(&mut self, id: u64, index: u64) {
        let Some(r) = self.seq.replica_mut() else { return };
        if r.gate == ReadGate::Asking(id) {
            r.gate = ReadGate::Until(index);
            self.check_read_gate();
        }
    }

    /// Opens the gate once this node has applied as far as the leader's answer.
    pub(crate) fn check_read_gate(&mut self) {
        let applied = self.state.last_index();
        let Some(r) = self.seq.replica_mut() else { return };
        if let ReadGate::Until(index) = r.gate {
            if applied >= index {
                r.gate = ReadGate::Open;
                info!(node = r.link.node, applied, leader = r.leader, "caught up with the leader; serving reads");
            }
        }
    }
}
