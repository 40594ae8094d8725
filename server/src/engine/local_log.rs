//! The standalone half of the commit stream: this server decides each write with its own
//! proposer (against the committed tree plus every decided, uncommitted change) and orders it
//! in its own log. The entries decided under one lock are appended in one write when the lock
//! is released; they commit at once in memory or with `--fsync never`, or when the syncer's
//! flush covers them (`--fsync always`, group commit). A cluster node decides nothing here:
//! its driver's proposer does, and its log is the driver's (`Engine::take_log`).
//!
//! [`LocalLog`] hands the engine the entries that commit; applying them (`commit.rs`) is the
//! engine's, the same for both halves of the stream.

use std::collections::VecDeque;

use testkeeper_core::pending::View;
use testkeeper_core::propose::{Decide, Proposer};
use testkeeper_core::state::State;
use testkeeper_core::txn::Entry;
use tracing::error;

use super::log_info::LogInfo;
use crate::log::memory::MemLog;
use crate::log::{HardState, Log};

/// The proposer and the log of a standalone server, and the entries between them.
pub(crate) struct LocalLog {
    proposer: Proposer,
    /// Where entries go before they commit.
    log: Box<dyn Log>,
    /// Entries decided under the current lock, appended in one write when it is released.
    outbox: Vec<Entry>,
    /// Entries appended but not yet durable (`--fsync always`), committed when the syncer
    /// reports their flush.
    unsynced: VecDeque<Entry>,
    /// The log needs no flush: entries commit as they are decided.
    in_memory: bool,
    /// Whether an entry commits as soon as it is appended (memory, or `--fsync never`), or
    /// only once the syncer has flushed it.
    commit_on_append: bool,
}

impl LocalLog {
    /// The stream over `log`, continuing `state`; `flushed` says whether appended entries
    /// wait for the syncer (`--fsync always` on a log that has one).
    pub(crate) fn new(state: &State, log: Box<dyn Log>, flushed: bool, broken_partial_multi: bool) -> LocalLog {
        let in_memory = log.syncer().is_none();
        let mut proposer = Proposer::new(state, 1);
        proposer.set_broken_partial_multi(broken_partial_multi);
        LocalLog {
            proposer,
            commit_on_append: in_memory || !flushed,
            log,
            outbox: Vec::new(),
            unsynced: VecDeque::new(),
            in_memory,
        }
    }

    /// Decides `what` for `session` at `now_ms`, for the waiter of `origin`, and queues the
    /// entry. Returns it, and whether it commits at once (in memory: before the next request).
    pub(crate) fn decide(
        &mut self,
        state: &State,
        session: i64,
        now_ms: i64,
        origin: u64,
        what: Decide<'_>,
    ) -> (&Entry, bool) {
        let entry = self.proposer.propose(state, session, now_ms, origin, what);
        self.outbox.push(entry);
        (self.outbox.last().expect("just pushed"), self.in_memory)
    }

    /// The committed tree plus every decided change.
    pub(crate) fn view<'a>(&'a self, state: &'a State) -> View<'a> {
        self.proposer.view(state)
    }

    /// Appends what was decided in one write, `commit` being the last applied index. Returns
    /// the entries that commit now (every one when the log needs no flush; none when they
    /// wait for the syncer), or `None` when nothing was waiting. Hand the emptied vector back
    /// with [`recycle`](Self::recycle).
    ///
    /// # Panics
    /// When the log refuses the write: an entry that cannot be written must never be
    /// acknowledged, so the server stops loudly.
    pub(crate) fn append(&mut self, commit: u64, info: &mut LogInfo) -> Option<Vec<Entry>> {
        if self.outbox.is_empty() {
            return None;
        }
        let hard = HardState { term: self.log.hard_state().term.max(1), vote: 0, commit };
        if let Err(e) = self.log.append(&self.outbox, hard) {
            error!(error = %e, "appending to the log failed; stopping");
            panic!("log append failed: {e}");
        }
        info.last_index = self.log.last_index();
        info.last_term = self.log.last_term();
        let mut entries = std::mem::take(&mut self.outbox);
        if self.commit_on_append {
            info.durable_index = info.last_index;
        } else {
            self.unsynced.extend(entries.drain(..));
        }
        Some(entries)
    }

    /// Takes back a vector [`append`](Self::append) returned, drained: the outbox keeps its
    /// allocation for the next write (commits may have decided more meanwhile).
    pub(crate) fn recycle(&mut self, emptied: Vec<Entry>) {
        if self.outbox.is_empty() {
            self.outbox = emptied;
        }
    }

    /// The next appended entry the syncer's flush up to `index` made durable.
    pub(crate) fn take_durable(&mut self, index: u64) -> Option<Entry> {
        self.unsynced.pop_front_if(|e| e.index() <= index)
    }

    /// Whether appended entries wait for a flush.
    pub(crate) fn needs_sync(&self) -> bool {
        !self.unsynced.is_empty()
    }

    /// Entry `index` was applied: the proposer's overlay lets go of it.
    pub(crate) fn committed(&mut self, index: u64) {
        self.proposer.committed(index);
    }

    /// The log's syncer, when entries must be flushed before they count.
    pub(crate) fn syncer(&self) -> Option<std::sync::Arc<dyn crate::log::Syncer>> {
        self.log.syncer()
    }

    /// The log, for compaction and its figures.
    pub(crate) fn log(&mut self) -> &mut dyn Log {
        self.log.as_mut()
    }

    /// Hands the log over (to a cluster node's Raft storage) and keeps an empty one.
    pub(crate) fn take_log(&mut self) -> Box<dyn Log> {
        let last = self.log.last_index();
        std::mem::replace(&mut self.log, Box::new(MemLog::new(0, last)))
    }

    /// Lets go of the log (so a data directory can be opened again), dropping what was not
    /// appended or not flushed.
    pub(crate) fn release(&mut self) {
        drop(self.take_log());
        self.unsynced.clear();
        self.outbox.clear();
    }
}
