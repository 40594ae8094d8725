//! The raft half of the commit stream, on the engine's side: while this node leads, its engine
//! decides every write with its own proposer, as a standalone engine does with `LocalLog`
//! (`engine/local_log.rs`), and hands the entry to the driver, which only orders it. A follower
//! forwards what it is asked (through its driver, to the leader's driver, which hands it to
//! its engine to decide: `Event::Decide`).
//!
//! The proposer starts once this leader has applied its term's first entry (`lead_start`):
//! everything before the term is in the tree it decides against. The driver checks each entry
//! against the log's end and term; one it cannot place comes back refused, and the proposer
//! goes back to where it was before that entry (its checkpoint), taking every later decision
//! back with it (the driver refuses those too, since their indexes no longer follow).

use std::collections::VecDeque;

use testkeeper_core::pending::View;
use testkeeper_core::propose::{Checkpoint, Decide, Proposal, Proposer};
use testkeeper_core::state::State;
use testkeeper_core::txn::Txn;
use testkeeper_wire::{Request, ZkError};

use super::broken::EarlyAck;
use super::{Replica, Role};
use crate::engine::Engine;

/// The proposer of a ready leader, and its decisions not yet applied.
pub(crate) struct Lead {
    proposer: Proposer,
    /// Each decision not yet applied here: its index, its origin, and the proposer before it.
    decided: VecDeque<(u64, u64, Checkpoint)>,
    /// The deliberately broken `forget-acked-on-leader-change` mode's copy of the state.
    early: Option<EarlyAck>,
}

impl std::fmt::Debug for Lead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lead").field("last_index", &self.proposer.last_index()).finish_non_exhaustive()
    }
}

impl Lead {
    /// Takes back the decision of `origin` and every later one; false if none is held.
    fn take_back(&mut self, origin: u64) -> bool {
        let Some(k) = self.decided.iter().position(|d| d.1 == origin) else { return false };
        let (_, _, cp) = self.decided.drain(k..).next().expect("position found above");
        self.proposer.restore(cp);
        true
    }
}

impl Replica {
    /// Entry `index` was applied: a leader's proposer drops from its overlay what the tree
    /// now holds.
    pub(crate) fn committed(&mut self, index: u64) {
        if let Some(lead) = self.lead.as_mut() {
            lead.proposer.committed(index);
            while lead.decided.front().is_some_and(|d| d.0 <= index) {
                lead.decided.pop_front();
            }
        }
    }

    /// The committed tree plus every decision of this leader's (the committed tree alone on a
    /// follower).
    pub(crate) fn view<'a>(&'a self, state: &'a State) -> View<'a> {
        self.lead.as_ref().map_or_else(|| View::committed(state.tree()), |lead| lead.proposer.view(state))
    }
}

impl Engine {
    /// A write, session entry or failure to order, in a cluster: decided here while this
    /// node is the ready leader, otherwise handed to the driver (to wait for a leader, or to
    /// go to it).
    pub(crate) fn propose_in_cluster(&mut self, origin: u64, session: i64, what: Decide<'_>) {
        let Some(r) = self.seq.replica() else { return };
        if r.lead.is_some() {
            self.decide_as_leader(origin, session, what);
        } else {
            r.link.propose(origin, session, Proposal::of(&what));
        }
    }

    /// The driver hands back a proposal for this leader to decide (`Event::Decide`).
    pub(crate) fn decide_handed(&mut self, origin: u64, session: i64, proposal: Proposal) {
        if self.seq.replica().is_some_and(|r| r.lead.is_some()) {
            self.decide_as_leader(origin, session, proposal.decide());
        } else {
            // The driver saw this leader ready after the entries that make it so: the engine
            // has applied them too, unless the role changed since. The outcome is unknown.
            self.refuse_anywhere(origin, ZkError::ConnectionLoss.code());
        }
    }

    /// Decides against the committed tree plus every decision not yet applied, and hands the
    /// entry to the driver.
    fn decide_as_leader(&mut self, origin: u64, session: i64, what: Decide<'_>) {
        let from = origin >> 48;
        let forwarded = self.seq.replica().is_some_and(|r| r.link.node != from);
        if forwarded && matches!(what, Decide::Write { .. }) && self.disk_low_now() {
            // A leader below its disk margin takes no client write, whichever node sent it
            // (`cluster/driver/disk.rs` hands the leadership on). Its own clients' writes were
            // refused before they were proposed (`engine/dispatch.rs`).
            return self.refuse_anywhere(origin, ZkError::NotReadOnly.code());
        }
        // ZooKeeper's leader checks a write's session against the node holding its
        // connection: from a connection the session has left, an error entry (a zxid, nothing
        // changed) whose waiter's connection is then closed.
        let moved = matches!(what, Decide::Write { req, .. } if !matches!(req, Request::Close))
            && self.session_moved_from(session, from);
        let what = if moved { Decide::Fail(ZkError::SessionMoved) } else { what };
        let invalid = self.take_invalid_digest_fault();
        let now = self.clock.now_ms();
        let Some(r) = self.seq.replica_mut() else { return };
        let me = r.link.node;
        let Some(lead) = r.lead.as_mut() else { return };
        let cp = lead.proposer.checkpoint();
        let entry = lead.proposer.propose(&self.state, session, now, origin, what);
        lead.decided.push_back((entry.index(), origin, cp));
        let mut early = lead.early.take();
        if let Txn::CreateSession { id, .. } = entry.txn() {
            self.set_session_owner(*id, from);
        }
        let entry = if invalid { entry.with_invalid_digest() } else { entry };
        if let Some(early) = early.as_mut() {
            early.decided(self, &entry, from == me);
        }
        let Some(r) = self.seq.replica_mut() else { return };
        if let Some(lead) = r.lead.as_mut() {
            lead.early = early;
        }
        r.link.decided(entry);
    }

    /// Fails the waiter of `origin`, here or (through the driver) on the node it came from.
    fn refuse_anywhere(&mut self, origin: u64, code: i32) {
        let Some(r) = self.seq.replica() else { return };
        if origin >> 48 == r.link.node {
            self.refused(origin, code);
        } else {
            r.link.refuse(origin, code);
        }
    }

    /// A decision of this leader's was not placed in the log: the proposer goes back to
    /// before it.
    pub(crate) fn take_back(&mut self, origin: u64) {
        if let Some(lead) = self.seq.replica_mut().and_then(|r| r.lead.as_mut()) {
            lead.take_back(origin);
        }
    }

    /// Starts the proposer once this leader has applied its term's first entry.
    pub(crate) fn lead_if_ready(&mut self) {
        let applied = self.state.last_index();
        let broken_multi = self.cfg.broken == Some(crate::broken::Broken::PartialMulti);
        let Some(r) = self.seq.replica_mut() else { return };
        if r.role != Role::Leader || r.lead.is_some() || r.lead_start.is_none_or(|s| applied < s) {
            return;
        }
        let mut proposer = Proposer::new(&self.state, r.term);
        proposer.set_broken_partial_multi(broken_multi);
        let early = EarlyAck::new(&self.cfg, &self.state);
        r.lead = Some(Lead { proposer, decided: VecDeque::new(), early });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::Clock;
    use crate::cluster::{Input, Link, Replica};
    use crate::config::ServerConfig;
    use crate::core::flavor::Flavor;
    use crate::engine::waiters::Reply;

    /// Node 1 leading term 1 from index 0, and what it hands its driver.
    fn leader() -> (Engine, flume::Receiver<Input>) {
        let mut e = Engine::new(Arc::new(ServerConfig::new(Flavor::Keeper)), Clock::manual(0));
        let (tx, rx) = flume::unbounded();
        e.join_cluster(Replica::new(Link { node: 1, tx }, Arc::default()));
        e.role_changed(Role::Leader, 1, 1, 0);
        (e, rx)
    }

    fn decided(rx: &flume::Receiver<Input>) -> Vec<testkeeper_core::txn::Entry> {
        rx.try_iter().filter_map(|i| if let Input::Decided { entry } = i { Some(entry) } else { None }).collect()
    }

    #[test]
    fn a_refused_decision_is_taken_back_with_every_later_one() {
        let (mut e, rx) = leader();
        for _ in 0..3 {
            e.propose(0, Decide::Noop, Reply::Internal);
        }
        let first = decided(&rx);
        assert_eq!(first.iter().map(|d| (d.index(), d.term())).collect::<Vec<_>>(), [(1, 1), (2, 1), (3, 1)]);
        // The driver could not place index 2 (so not 3 either): the proposer goes back to 1.
        e.refused(first[1].origin(), ZkError::ConnectionLoss.code());
        // The refusal of 3 comes after; nothing of it is held any more, so nothing moves.
        e.refused(first[2].origin(), ZkError::ConnectionLoss.code());
        e.propose(0, Decide::Noop, Reply::Internal);
        let again = decided(&rx);
        assert_eq!(again.iter().map(|d| d.index()).collect::<Vec<_>>(), [2]);
        // Applied, the decisions leave the table; a late refusal of one takes nothing back.
        e.commit(first[0].clone());
        e.commit(again[0].clone());
        e.refused(first[0].origin(), ZkError::ConnectionLoss.code());
        e.propose(0, Decide::Noop, Reply::Internal);
        assert_eq!(decided(&rx).iter().map(|d| d.index()).collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn a_leader_decides_only_once_its_terms_first_entry_is_applied() {
        let mut e = Engine::new(Arc::new(ServerConfig::new(Flavor::Keeper)), Clock::manual(0));
        let (tx, rx) = flume::unbounded();
        e.join_cluster(Replica::new(Link { node: 1, tx }, Arc::default()));
        e.role_changed(Role::Leader, 1, 2, 1);
        e.propose(0, Decide::Noop, Reply::Internal);
        // Not ready: the proposal goes to the driver, to wait there.
        assert!(matches!(rx.try_recv(), Ok(Input::Propose { .. })));
        let mut p = Proposer::new(e.state(), 2);
        let empty = p.propose(e.state(), 0, 0, 0, Decide::Noop);
        e.on_event(crate::cluster::Event::Committed(vec![empty]));
        e.propose(0, Decide::Noop, Reply::Internal);
        assert_eq!(decided(&rx).iter().map(|d| (d.index(), d.term())).collect::<Vec<_>>(), [(2, 2)]);
        // A new role voids the proposer: the next proposal waits at the driver again.
        e.role_changed(Role::Follower, 3, 3, 0);
        e.propose(0, Decide::Noop, Reply::Internal);
        assert!(matches!(rx.try_recv(), Ok(Input::Propose { .. })));
    }
}
