//! The driver's view of its role: what changes when raft-rs's soft state does (in-flight
//! proposals of an older term fail, parked ones go to the new leader), the periodic work of
//! each tick, and the Raft picture it publishes (`mntr`, `lgif`, `/ready`).

// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use raft::StateRole;
use testkeeper_wire::ZkError;
use tracing::{error, info};

use super::super::info::{FollowerInfo, RaftInfo};
use super::super::message::Msg;
use super::super::{Event, NodeId, Role};
use super::{Driver, OPERATION_TIMEOUT};

impl Driver {
    /// Periodic work: report session activity to the leader, time out parked proposals,
    /// pick up a snapshot the engine finished.
    pub(super) fn on_tick(&mut self) {
        self.publish();
        self.disk_on_tick();
        let (touched, snap) = (self.board.take_touched(), self.board.take_snapshot());
        self.disk_hand_off();
        if !touched.is_empty() && self.role != Role::Leader && self.leader != 0 {
            self.net.send(self.id, self.leader, Msg::Touch { sessions: touched });
        }
        let now = Instant::now();
        while self.parked.front().is_some_and(|(t, ..)| now.duration_since(*t) > OPERATION_TIMEOUT) {
            let (_, origin, ..) = self.parked.pop_front().expect("checked above");
            self.refuse(origin, ZkError::OperationTimeout.code());
        }
        // A forwarded proposal can be lost on the way (the leader never saw it): after
        // Keeper's operation timeout its client gets OPERATIONTIMEOUT, as Keeper answers.
        let late: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, (_, at))| now.duration_since(*at) > OPERATION_TIMEOUT)
            .map(|(o, _)| *o)
            .collect();
        for origin in late {
            self.refuse_local(origin, ZkError::OperationTimeout.code());
        }
        if let Some((snap, keep_from)) = snap.filter(|(s, _)| s.index > self.node.store().snapshot_index()) {
            // raft-rs still reads what it has not reported committed (a snapshot taken after
            // entries applied on the leader's stored copy can be ahead of that).
            let keep_from = keep_from.min(self.node.raft.raft_log.applied + 1);
            if let Err(e) = self.node.mut_store().snapshot_taken(snap, keep_from) {
                error!(node = self.id, error = %e, "compacting the raft log failed");
            }
        }
    }

    /// The log and, while leading, the followers' progress, for the engine to report.
    pub(super) fn info(&self) -> RaftInfo {
        let r = &self.node.raft;
        let leading = r.state == StateRole::Leader;
        let followers = if leading {
            (r.prs().iter())
                .filter(|(id, _)| **id != self.id)
                .map(|(id, p)| FollowerInfo {
                    id: *id,
                    matched: p.matched,
                    active: p.recent_active,
                    replicating: p.state == raft::ProgressState::Replicate,
                })
                .collect()
        } else {
            Vec::new()
        };
        RaftInfo {
            first_index: r.raft_log.first_index(),
            last_index: r.raft_log.last_index(),
            last_term: r.raft_log.last_term(),
            // Entries handed to the engine are committed, those applied on the leader's stored
            // copy too, whether or not the leader's commit index has said so yet.
            commit: r.raft_log.committed.max(self.handed),
            leader_commit: if leading { r.raft_log.committed } else { self.leader_commit },
            snapshot_index: self.node.store().snapshot_index(),
            followers,
            stale_log_gap: self.stale_log_gap,
            members: self.peers.clone(),
            applied_on_stored: self.ahead.count,
        }
    }

    pub(super) fn soft_state(&mut self, leader: NodeId, role: StateRole) {
        let role = match role {
            StateRole::Leader => Role::Leader,
            StateRole::Follower => Role::Follower,
            StateRole::Candidate | StateRole::PreCandidate => Role::Candidate,
        };
        let term = self.node.raft.term;
        // A new term alone is a change too: this node may have lost and won the leadership
        // between two readies, and its engine's decisions of the older term are void.
        let changed = (leader, role, term) != (self.leader, self.role, self.term);
        (self.leader, self.role) = (leader, role);
        if term != self.term {
            self.term = term;
            // A proposal sent in an older term may be lost: its outcome is unknown.
            let stale: Vec<u64> = self.in_flight.iter().filter(|(_, (t, _))| *t < term).map(|(o, _)| *o).collect();
            for origin in stale {
                self.refuse_local(origin, ZkError::ConnectionLoss.code());
            }
        }
        if !changed {
            return;
        }
        info!(node = self.id, role = role.name(), leader, term, "raft role changed");
        self.decided.clear();
        if role == Role::Leader {
            // raft-rs appended this term's first (empty) entry when it became leader.
            self.lead_start = self.node.raft.raft_log.last_index();
        }
        // Role and gate in one event: no read is served between the two.
        let gate = self.gate_on_role();
        self.emit(Event::Role { role, leader, term, lead_start: self.lead_start, gate });
        if role != Role::Leader && leader != 0 {
            // Forward what waited for a leader.
            for (_, origin, session, proposal) in std::mem::take(&mut self.parked) {
                self.proposal(origin, session, proposal);
            }
            for id in std::mem::take(&mut self.syncs) {
                self.net.send(self.id, leader, Msg::SyncAsk { id });
            }
        }
    }
}
