//! The driver's proposals: a client's write on any node goes to the leader, whose proposer
//! decides it against the committed state plus everything it proposed; what cannot be placed
//! is refused with the error Keeper gives; `sync` and leadership transfer.

// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use raft::StateRole;
use testkeeper_core::propose::{Decide, Proposal};
use testkeeper_core::txn::Txn;
use testkeeper_wire::{Request, ZkError};
use tracing::{error, info, warn};

use super::super::message::Msg;
use super::super::store::to_raft;
use super::super::{NodeId, Role};
use super::Driver;

impl Driver {
    /// A proposal, this node's own or forwarded by a follower.
    pub(super) fn proposal(&mut self, origin: u64, session: i64, proposal: Proposal) {
        let local = origin >> 48 == self.id;
        if self.role == Role::Leader && self.node.raft.state != StateRole::Leader {
            // A message read in this same batch (a paused node waking up to a newer term)
            // already made raft-rs a follower and may have cut its log: deciding against the
            // old leader's proposer now would misnumber the entry. Take the new role first.
            let leader = self.node.raft.leader_id;
            self.soft_state(leader, self.node.raft.state);
        }
        match self.role {
            Role::Leader if self.proposer.is_some() => self.decide(origin, session, proposal),
            Role::Leader => self.parked.push_back((Instant::now(), origin, session, proposal)),
            _ if !local => {
                self.net.send(self.id, origin >> 48, Msg::Refuse { origin, code: ZkError::ConnectionLoss.code() })
            }
            _ if self.leader != 0 => {
                self.in_flight.insert(origin, (self.term, Instant::now()));
                self.net.send(self.id, self.leader, Msg::Forward { origin, session, proposal });
            }
            _ => self.parked.push_back((Instant::now(), origin, session, proposal)),
        }
    }

    /// As the ready leader: decide the entry against the committed state plus everything
    /// this leader proposed, and propose it.
    pub(super) fn decide(&mut self, origin: u64, session: i64, proposal: Proposal) {
        if self.refused_for_disk(origin, &proposal) {
            return;
        }
        let Some(shared) = self.shared.upgrade() else { return };
        let entry = {
            let mut e = shared.engine();
            let proposer = self.proposer.as_mut().expect("checked by the caller");
            let cp = proposer.checkpoint();
            // ZooKeeper's leader checks a write's session against the node holding its
            // connection: from a connection the session has left, an error entry (a zxid,
            // nothing changed) whose waiter's connection is then closed.
            let from = origin >> 48;
            let moved = matches!(&proposal, Proposal::Write { req, .. } if !matches!(req, Request::Close))
                && e.session_moved_from(session, from);
            let what = if moved { Decide::Fail(ZkError::SessionMoved) } else { proposal.decide() };
            let entry = proposer.propose(e.state(), session, e.clock.now_ms(), origin, what);
            if let Txn::CreateSession { id, .. } = entry.txn() {
                e.set_session_owner(*id, from);
            }
            let entry = if e.take_invalid_digest_fault() { entry.with_invalid_digest() } else { entry };
            let expected = self.node.raft.raft_log.last_index() + 1;
            if entry.index() != expected {
                // Cannot happen while the role is current (see `proposal`): a bug, so loud.
                error!(
                    node = self.id,
                    decided = entry.index(),
                    raft = expected,
                    "proposer and raft log disagree on the next index"
                );
                proposer.restore(cp);
                drop(e);
                return self.refuse(origin, ZkError::ConnectionLoss.code());
            }
            (entry, cp)
        };
        let (entry, cp) = entry;
        if origin >> 48 == self.id {
            self.in_flight.insert(origin, (self.term, Instant::now()));
        }
        if let Err(e) = self.node.propose(vec![], to_raft(&entry).data.into()) {
            warn!(node = self.id, error = %e, "proposal dropped");
            if let Some(p) = self.proposer.as_mut() {
                p.restore(cp);
            }
            self.in_flight.remove(&origin);
            self.refuse(origin, ZkError::ConnectionLoss.code());
        } else {
            if let Some(early) = self.early.as_mut() {
                early.appended(&mut shared.engine(), &entry, origin >> 48 == self.id);
            }
            self.decided.push_back(entry);
        }
    }

    /// Fails a proposal's waiter, here or on the node it came from.
    pub(super) fn refuse(&mut self, origin: u64, code: i32) {
        let node = origin >> 48;
        if node == self.id {
            self.refuse_local(origin, code);
        } else {
            self.net.send(self.id, node, Msg::Refuse { origin, code });
        }
    }

    pub(super) fn refuse_local(&mut self, origin: u64, code: i32) {
        self.in_flight.remove(&origin);
        if let Some(s) = self.shared.upgrade() {
            s.engine().refused(origin, code);
        }
    }

    pub(super) fn sync_request(&mut self, id: u64) {
        if self.role == Role::Leader {
            let index = self.node.raft.raft_log.last_index();
            if let Some(s) = self.shared.upgrade() {
                s.engine().sync_answered(id, index);
            }
        } else if self.leader != 0 {
            self.net.send(self.id, self.leader, Msg::SyncAsk { id });
        } else {
            self.syncs.push_back(id);
        }
    }

    /// `rqld`/`ydld`: to node `to` (raft-rs forwards a follower's request to the leader), or,
    /// with `to == 0` on the leader, to the follower that has the most of the log (the lowest
    /// id among equals), as NuRaft's yield picks the most up-to-date successor.
    pub(super) fn transfer_leader(&mut self, to: NodeId) {
        let to = if to != 0 {
            to
        } else if self.role == Role::Leader {
            let best = (self.node.raft.prs().iter())
                .filter(|(id, _)| **id != self.id)
                .max_by_key(|(id, p)| (p.matched, std::cmp::Reverse(**id)))
                .map(|(id, _)| *id);
            match best {
                Some(b) => b,
                None => return,
            }
        } else {
            return;
        };
        info!(node = self.id, to, leader = self.leader, "leadership transfer requested");
        self.node.transfer_leader(to);
    }
}
