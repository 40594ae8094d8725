//! The driver's `Ready`, in raft-rs's documented order (messages, snapshot, committed
//! entries, append with the hard state, flush, persisted messages, advance, the light ready,
//! advance_apply), and what each step does to the engine: a leader's snapshot replaces the
//! state, committed entries are applied with the one `apply`. Where appending and flushing
//! cost nothing (memory, the simulated disk) the entries are stored before the messages go,
//! so every message says its entries are in the sender's log (`driver/ahead.rs`).

use std::sync::Arc;

use raft::eraftpb::Snapshot;
use testkeeper_core::propose::Proposer;
use tracing::info;

use testkeeper_core::txn::Entry;

use super::super::store::{from_raft, SnapRef};
use super::super::Role;
use super::Driver;

impl Driver {
    /// Handles one `Ready`, if there is one. Returns false once the node has stopped.
    pub(super) fn ready(&mut self) -> bool {
        if !self.node.has_ready() {
            return true;
        }
        let mut rd = self.node.ready();
        if let Some(ss) = rd.ss() {
            let (leader, role) = (ss.leader_id, ss.raft_state);
            self.soft_state(leader, role);
        }
        // 1. Messages a leader may send before it has persisted (here, where storing is
        // free, after: steps 4 and 5 come first, past the snapshot they build on).
        if !self.stored_first {
            self.send(rd.take_messages(), false);
        }
        // 2. A snapshot from the leader replaces the state.
        if !rd.snapshot().is_empty() && !self.install(rd.snapshot().clone()) {
            return false;
        }
        if self.stored_first {
            if !self.store(&rd) {
                return false;
            }
            self.send(rd.take_messages(), true);
        }
        // 3. Committed entries.
        if !self.apply(rd.take_committed_entries()) {
            return false;
        }
        // 4 and 5. New entries and the hard state, in one write; then the flush.
        if !self.stored_first && !self.store(&rd) {
            return false;
        }
        // 6. Messages that may go only once the entries and hard state are durable.
        self.send(rd.take_persisted_messages(), true);
        // 7. Advance, and the light ready it returns.
        let mut light = self.node.advance(rd);
        if let Some(commit) = light.commit_index() {
            self.node.mut_store().set_commit(commit);
        }
        self.send(light.take_messages(), true);
        if !self.apply(light.take_committed_entries()) {
            return false;
        }
        self.node.advance_apply();
        if !self.apply_on_stored() {
            return false;
        }
        // What changed is visible at once (mntr, lgif, /metrics), not only at the next tick.
        self.publish();
        true
    }

    /// Steps 4 and 5: the `Ready`'s entries and hard state in one write, then the flush.
    fn store(&mut self, rd: &raft::Ready) -> bool {
        if !rd.entries().is_empty() || rd.hs().is_some() {
            if let Err(e) = self.node.mut_store().append(rd.entries(), rd.hs()) {
                return self.fail(format!("appending to the raft log failed: {e}"));
            }
        }
        if rd.must_sync() {
            if let Some(s) = self.node.store().syncer() {
                if let Err(e) = s.sync() {
                    return self.fail(format!("flushing the raft log failed: {e}"));
                }
            }
        }
        true
    }

    pub(super) fn install(&mut self, snap: Snapshot) -> bool {
        let meta = snap.get_metadata();
        let (index, term) = (meta.index, meta.term);
        let Some(shared) = self.shared.upgrade() else { return false };
        let body = Arc::new(snap.data.to_vec());
        {
            let mut e = shared.engine();
            if let Err(why) = e.install_snapshot(&body, index) {
                drop(e);
                return self.fail(format!("the leader's snapshot at index {index} does not load: {why}"));
            }
            e.applied_through(index);
        }
        if let Err(e) = self.node.mut_store().install(SnapRef { index, term, body }) {
            return self.fail(format!("resetting the raft log to the snapshot failed: {e}"));
        }
        info!(node = self.id, index, term, "installed the leader's snapshot");
        true
    }

    /// Applies committed entries. Returns false if the engine stopped (a digest mismatch).
    pub(super) fn apply(&mut self, entries: Vec<raft::eraftpb::Entry>) -> bool {
        if entries.is_empty() {
            return true;
        }
        // A follower applied most of them already, on the leader's stored copy: those are not
        // decoded only to be skipped.
        let Some(applied) = self.shared.upgrade().map(|s| s.engine().state().last_index()) else { return false };
        let decoded: Vec<_> = (entries.iter().filter(|re| re.index > applied))
            .map(|re| match self.take_decided(re.index, re.term) {
                Some(ours) => Ok(ours),
                None => from_raft(re).map_err(|why| format!("committed entry {} does not decode: {why}", re.index)),
            })
            .collect();
        self.apply_each(decoded.into_iter())
    }

    /// This leader's own entry at `index`, as it decided it, if it proposed the entry Raft
    /// committed there (the same term); older ones are dropped on the way.
    fn take_decided(&mut self, index: u64, term: u64) -> Option<Entry> {
        while self.decided.front().is_some_and(|d| d.index() < index) {
            self.decided.pop_front();
        }
        let d = self.decided.front()?;
        (d.index() == index && d.term() == term).then(|| self.decided.pop_front()).flatten()
    }

    /// Applies committed entries already in our form (read from our log).
    pub(super) fn apply_ours(&mut self, entries: Vec<Entry>) -> bool {
        self.apply_each(entries.into_iter().map(Ok))
    }

    /// Applies committed entries in order, skipping those already applied (on the leader's
    /// stored copy, `driver/ahead.rs`). Returns false if the engine stopped.
    fn apply_each(&mut self, entries: impl Iterator<Item = Result<Entry, String>>) -> bool {
        let Some(shared) = self.shared.upgrade() else { return false };
        let mut e = shared.engine();
        for entry in entries {
            let entry = match entry {
                Ok(x) => x,
                Err(why) => {
                    drop(e);
                    return self.fail(why);
                }
            };
            if entry.index() <= e.state().last_index() {
                continue;
            }
            if entry.origin() >> 48 == self.id {
                self.in_flight.remove(&entry.origin());
            }
            let index = entry.index();
            e.commit(entry);
            e.applied_through(index);
            if let Some(why) = e.stopped_reason() {
                drop(e);
                return self.fail(why);
            }
            if let Some(p) = self.proposer.as_mut() {
                p.committed(index);
            }
        }
        if self.role == Role::Leader && self.proposer.is_none() && e.state().last_index() >= self.lead_start {
            // Everything before this term is applied: the overlay starts empty over it.
            let mut proposer = Proposer::new(e.state(), self.term);
            proposer.set_broken_partial_multi(e.cfg.broken == Some(crate::broken::Broken::PartialMulti));
            self.early = super::super::broken::EarlyAck::new(&e.cfg, e.state());
            debug_assert_eq!(proposer.last_index(), self.node.raft.raft_log.last_index());
            self.proposer = Some(proposer);
            drop(e);
            for (_, origin, session, proposal) in std::mem::take(&mut self.parked) {
                self.proposal(origin, session, proposal);
            }
            for id in std::mem::take(&mut self.syncs) {
                self.sync_request(id);
            }
        }
        true
    }
}
