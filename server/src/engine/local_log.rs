//! The standalone half of the commit stream: this server decides each write with its own
//! proposer (against the committed tree plus every decided, uncommitted change) and orders it
//! in its own log. The entries decided under one lock are appended in one write when the lock
//! is released; they commit at once in memory or with `--fsync never`, or when the syncer's
//! flush covers them (`--fsync always`, group commit). A cluster node decides nothing here:
//! while it leads it decides with the raft half's proposer (`cluster/lead.rs`), and its log is
//! the driver's (`Engine::take_log`).
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

    /// Takes back a vector [`append`](Self::append) returned, once its entries were
    /// committed: the outbox keeps its allocation for the next write (unless commits decided
    /// more meanwhile). What is left in it was appended already and is dropped.
    pub(crate) fn recycle(&mut self, mut used: Vec<Entry>) {
        if self.outbox.is_empty() {
            used.clear();
            self.outbox = used;
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

#[cfg(test)]
mod tests {
    use testkeeper_core::flavor::Flavor;
    use testkeeper_core::txn::Txn;
    use testkeeper_wire::records::create::CreateRequest;
    use testkeeper_wire::request::CreateOp;
    use testkeeper_wire::{Acl, OpCode, Request, ZkError};

    use super::*;
    use crate::config::ServerConfig;
    use crate::engine::Engine;
    use crate::log::sim::{SimDisk, SimLog};

    fn create(path: &str) -> Request {
        let req = CreateRequest { path: path.into(), data: Some(Vec::new()), acl: Acl::open(), flags: 0 };
        Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
    }

    fn state() -> State {
        State::new(&Engine::fresh_options(&ServerConfig::new(Flavor::Keeper), 0))
    }

    /// In memory an entry commits at once, and what one lock decided is appended in one write;
    /// the second of two creates of one path is decided against the first (NODEEXISTS).
    #[test]
    fn in_memory_what_is_decided_commits_at_once_in_one_append() {
        let state = state();
        let mut l = LocalLog::new(&state, Box::new(MemLog::new(0, state.last_index())), true, false);
        let (a, b) = (create("/a"), create("/a"));
        let (_, at_once) = l.decide(&state, 0, 1, 11, Decide::Write { req: &a, auth: &[] });
        assert!(at_once);
        l.decide(&state, 0, 1, 12, Decide::Write { req: &b, auth: &[] });
        let mut info = LogInfo::default();
        let batch = l.append(state.last_index(), &mut info).expect("two entries waiting");
        assert_eq!(batch.iter().map(Entry::origin).collect::<Vec<_>>(), vec![11, 12]);
        assert_eq!(*batch[1].txn(), Txn::Failed(ZkError::NodeExists), "{:?}", batch[1]);
        assert_eq!((info.last_index, info.durable_index), (batch[1].index(), batch[1].index()));
        l.recycle(batch);
        assert!(l.append(state.last_index(), &mut info).is_none(), "nothing left");
        assert!(!l.needs_sync());
    }

    /// With `--fsync always` on a log that flushes, appended entries wait for the flush, and a
    /// flush up to an index hands back exactly the entries it covers, in order.
    #[test]
    fn a_flushed_log_holds_entries_until_the_flush_covers_them() {
        let state = state();
        let (log, _, _) = SimLog::open(&SimDisk::new()).unwrap();
        let mut l = LocalLog::new(&state, Box::new(log), true, false);
        let reqs = [create("/a"), create("/b"), create("/c")];
        for (i, r) in reqs.iter().enumerate() {
            let (_, at_once) = l.decide(&state, 0, 1, i as u64 + 1, Decide::Write { req: r, auth: &[] });
            assert!(!at_once);
        }
        let mut info = LogInfo::default();
        let batch = l.append(state.last_index(), &mut info).unwrap();
        assert!(batch.is_empty(), "nothing commits before the flush");
        assert!(l.needs_sync());
        let first = state.last_index() + 1;
        let took: Vec<u64> = std::iter::from_fn(|| l.take_durable(first + 1)).map(|e| e.index()).collect();
        assert_eq!(took, vec![first, first + 1]);
        assert_eq!(l.take_durable(first + 2).map(|e| e.index()), Some(first + 2));
        assert!(!l.needs_sync());
    }
}
