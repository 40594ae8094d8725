//! The driver's `Ready`, in raft-rs's documented order (messages, snapshot, committed
//! entries, append with the hard state, flush, persisted messages, advance, the light ready,
//! advance_apply), and what each step hands the engine: a leader's snapshot, which replaces
//! the state, and committed entries, which it applies with the one `apply` (both through the
//! stream of `cluster/events.rs`, in this order). Where appending and flushing
//! cost nothing (memory, the simulated disk) the entries are stored before the messages go,
//! so every message says its entries are in the sender's log (`driver/ahead.rs`).

use std::sync::Arc;

use raft::eraftpb::Snapshot;
use testkeeper_core::txn::Entry;
use tracing::info;

use super::super::store::{from_raft, SnapRef};
use super::super::Event;
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
        } else if self.node.raft.term != self.term {
            // A term that moved while leader and role came back to what they were (lost and won
            // again between two readies) is a change raft-rs's soft state does not report.
            let (leader, role) = (self.node.raft.leader_id, self.node.raft.state);
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
        let body = Arc::new(snap.data.to_vec());
        // The engine loads it after everything handed before it; one that does not load stops
        // the node (and this driver with it).
        self.emit(Event::Snapshot { body: body.clone(), index });
        self.handed = index;
        if let Err(e) = self.node.mut_store().install(SnapRef { index, term, body }) {
            return self.fail(format!("resetting the raft log to the snapshot failed: {e}"));
        }
        info!(node = self.id, index, term, "installed the leader's snapshot");
        true
    }

    /// Hands committed entries on. Returns false if one does not decode.
    pub(super) fn apply(&mut self, entries: Vec<raft::eraftpb::Entry>) -> bool {
        if entries.is_empty() {
            return true;
        }
        // A follower handed most of them on already, on the leader's stored copy: those are
        // not decoded only to be skipped.
        let handed = self.handed;
        let mut ours = Vec::with_capacity(entries.len());
        for re in entries.iter().filter(|re| re.index > handed) {
            match self.take_decided(re.index, re.term) {
                Some(e) => ours.push(e),
                None => match from_raft(re) {
                    Ok(e) => ours.push(e),
                    Err(why) => return self.fail(format!("committed entry {} does not decode: {why}", re.index)),
                },
            }
        }
        self.apply_ours(ours);
        true
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

    /// Hands committed entries, already in our form, to the engine in index order, skipping
    /// those handed before (on the leader's stored copy, `driver/ahead.rs`); once this
    /// leader's first entry is among them, what waited for it goes to the engine to decide.
    pub(super) fn apply_ours(&mut self, mut entries: Vec<Entry>) {
        entries.retain(|e| e.index() > self.handed);
        if let Some(last) = entries.last() {
            self.handed = last.index();
            for e in entries.iter().filter(|e| e.origin() >> 48 == self.id) {
                self.in_flight.remove(&e.origin());
            }
            self.emit(Event::Committed(entries));
        }
        if self.lead_ready() && !(self.parked.is_empty() && self.syncs.is_empty()) {
            // Everything before this term is handed on: the engine's proposer starts over it,
            // and what waited for it goes to the engine.
            for (_, origin, session, proposal) in std::mem::take(&mut self.parked) {
                self.proposal(origin, session, proposal);
            }
            for id in std::mem::take(&mut self.syncs) {
                self.sync_request(id);
            }
        }
    }
}
