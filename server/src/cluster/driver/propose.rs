//! The driver's proposals: a client's write on any node goes to the leader, whose engine
//! decides it against the committed state plus everything it decided (`cluster/lead.rs`), and
//! whose driver places the entry in the log; what cannot be placed is refused with the error
//! Keeper gives; `sync` and leadership transfer.

// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use raft::StateRole;
use testkeeper_core::propose::Proposal;
use testkeeper_core::txn::Entry;
use testkeeper_wire::ZkError;
use tracing::{info, warn};

use super::super::message::Msg;
use super::super::store::to_raft;
use super::super::{Event, NodeId, Role};
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
            Role::Leader if self.lead_ready() => {
                self.handed_back = true;
                self.emit(Event::Decide { origin, session, proposal });
            }
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

    /// An entry this node's engine decided as the leader: proposed if it follows the log in
    /// this term, otherwise refused, and the engine's proposer takes the decision back.
    pub(super) fn place(&mut self, entry: Entry) {
        if self.role == Role::Leader && self.node.raft.state != StateRole::Leader {
            // As in `proposal`: take a role change read in this batch first.
            let leader = self.node.raft.leader_id;
            self.soft_state(leader, self.node.raft.state);
        }
        let origin = entry.origin();
        let r = &self.node.raft;
        let follows = entry.term() == r.term && entry.index() == r.raft_log.last_index() + 1;
        if self.role != Role::Leader || !follows {
            // Decided in a role, term or log end this node has left: the engine learns of the
            // change in the stream (a refusal after it takes nothing back that is current).
            return self.undecide(origin);
        }
        if origin >> 48 == self.id {
            self.in_flight.insert(origin, (self.term, Instant::now()));
        }
        if let Err(e) = self.node.propose(vec![], to_raft(&entry).data.into()) {
            // raft-rs drops proposals while a leadership transfer is under way.
            warn!(node = self.id, error = %e, "proposal dropped");
            self.in_flight.remove(&origin);
            return self.undecide(origin);
        }
        self.decided.push_back(entry);
    }

    /// Refuses a decided entry: its waiter fails wherever it is, and this node's engine takes
    /// the decision back.
    fn undecide(&mut self, origin: u64) {
        let code = ZkError::ConnectionLoss.code();
        if origin >> 48 != self.id {
            self.net.send(self.id, origin >> 48, Msg::Refuse { origin, code });
        }
        self.refuse_local(origin, code);
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
        self.emit(Event::Refused { origin, code });
    }

    pub(super) fn sync_request(&mut self, id: u64) {
        if self.role == Role::Leader {
            let index = self.node.raft.raft_log.last_index();
            self.emit(Event::SyncAnswered { id, index });
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
