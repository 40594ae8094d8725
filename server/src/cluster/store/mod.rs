//! raft-rs's `Storage` over our [`Log`]: entries are our entries (a Raft entry's data is the
//! core's entry encoding; an empty one, a new leader's first entry, is our `Noop`), the hard
//! state travels with every append, and the newest snapshot is what a lagging follower gets.
//! Terms are kept beside the log in memory, because raft-rs asks for them on every append.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use protobuf::Message as _;
use raft::eraftpb::{self, ConfState, Entry as RaftEntry, EntryType, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};
use testkeeper_core::codec::{decode_entry, encode_entry, CodecError};
use testkeeper_core::txn::{Entry, Txn};

use crate::log::{HardState, Log, LogError, Syncer};

/// Our entry as raft-rs carries it.
pub fn to_raft(e: &Entry) -> RaftEntry {
    let mut r = RaftEntry::default();
    r.set_entry_type(EntryType::EntryNormal);
    (r.term, r.index) = (e.term(), e.index());
    if !matches!(e.txn(), Txn::Noop) || e.origin() != 0 {
        let mut data = Vec::new();
        encode_entry(e, &mut data);
        r.data = Bytes::from(data);
    }
    r
}

/// A Raft entry as ours.
///
/// # Errors
/// Data that is not an entry (a peer running other code, or corruption in transit).
pub fn from_raft(r: &RaftEntry) -> Result<Entry, CodecError> {
    if r.get_entry_type() != EntryType::EntryNormal {
        return Err(CodecError(format!("entry {} is a configuration change; membership is static", r.index)));
    }
    if r.data.is_empty() {
        return Ok(Entry::noop(r.index, r.term));
    }
    decode_entry(r.index, r.term, &r.data)
}

/// The newest snapshot: its index and term, and its (uncompressed) body.
#[derive(Debug, Clone)]
pub struct SnapRef {
    pub index: u64,
    pub term: u64,
    pub body: Arc<Vec<u8>>,
}

fn storage(e: LogError) -> raft::Error {
    raft::Error::Store(StorageError::Other(Box::new(e)))
}

/// The Raft log and hard state of one node.
pub struct RaftStore {
    log: Box<dyn Log>,
    /// Term of every entry held, `first..=last`.
    terms: VecDeque<u64>,
    /// The term of the entry just before the first one held (a snapshot's).
    prior_term: u64,
    hard: eraftpb::HardState,
    conf: ConfState,
    snap: Option<SnapRef>,
    /// The newest entries as raft-rs appended them, for it to read back when it sends them.
    tail: Tail,
}

/// How many of the newest entries [`Tail`] keeps: what a leader sends a follower that keeps
/// up is always among them.
const TAIL: usize = 4096;

/// The newest entries of the log in raft-rs's form, contiguous and ending at the log's last
/// entry (or empty). A leader reads every entry back right after appending it, to send it to
/// each follower; re-encoding it from our form each time cost more than the append itself
/// (the data is a shared `Bytes`, so a copy here is a reference count).
#[derive(Default)]
struct Tail {
    entries: VecDeque<RaftEntry>,
}

impl Tail {
    fn first(&self) -> Option<u64> {
        self.entries.front().map(|e| e.index)
    }

    /// `entries` were appended after everything below `entries[0].index` (a conflicting
    /// suffix already cut from the log).
    fn appended(&mut self, entries: &[RaftEntry]) {
        let Some(first) = entries.first() else { return };
        match self.first() {
            Some(f) if first.index > f => self.entries.truncate((first.index - f) as usize),
            _ => self.entries.clear(),
        }
        if self.entries.back().is_some_and(|e| e.index + 1 != first.index) {
            self.entries.clear();
        }
        self.entries.extend(entries.iter().cloned());
        let over = self.entries.len().saturating_sub(TAIL);
        self.entries.drain(..over);
    }

    /// The log now starts at `first`.
    fn compacted(&mut self, first: u64) {
        let drop_n = self.first().map_or(0, |f| first.saturating_sub(f) as usize);
        self.entries.drain(..drop_n.min(self.entries.len()));
    }

    /// Entries `low..high` within `budget`, if all of them are here.
    fn get(&self, low: u64, high: u64, budget: &mut Budget) -> Option<Vec<RaftEntry>> {
        let f = self.first()?;
        let last = f + self.entries.len() as u64;
        (low >= f && high <= last).then(|| {
            let range = self.entries.range((low - f) as usize..(high - f) as usize);
            range.take_while(|e| budget.take(e)).cloned().collect()
        })
    }
}

/// A snapshot's shared body as the bytes of a Raft message.
struct ArcBody(Arc<Vec<u8>>);

impl AsRef<[u8]> for ArcBody {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// raft-rs's size bound on one read of entries (`raft::util::limit_size`): the first entry
/// always, then entries while their total size stays within `max`. Applied while reading, not
/// after: a leader reads a lagging follower's next append from `next..last + 1`, and reading
/// all of that to keep 64 KiB of it was the whole cost of catching up a follower 90,000
/// entries behind (about 100 MB read per append; the leader's driver stood still for seconds
/// and the healthy follower elected itself).
struct Budget {
    max: u64,
    used: u64,
    taken: usize,
}

impl Budget {
    fn new(max: Option<u64>) -> Budget {
        Budget { max: max.unwrap_or(raft::NO_LIMIT), used: 0, taken: 0 }
    }

    /// Whether `e` fits; counts it if it does.
    fn take(&mut self, e: &RaftEntry) -> bool {
        let used = self.used.saturating_add(u64::from(e.compute_size()));
        if self.taken > 0 && used > self.max {
            return false;
        }
        (self.used, self.taken) = (used, self.taken + 1);
        true
    }
}

/// Entries read from the log at a time while a [`Budget`] is left: the first read is small
/// (most appends hold a few entries), then doubles.
const FIRST_READ: u64 = 16;
const LARGEST_READ: u64 = 4096;

impl RaftStore {
    /// A store over `log` for a cluster of `voters`; `snap` is the newest snapshot, if any.
    ///
    /// # Errors
    /// The log cannot be read.
    pub fn new(log: Box<dyn Log>, voters: Vec<u64>, snap: Option<SnapRef>) -> Result<RaftStore, LogError> {
        let span = log.span();
        let mut terms = VecDeque::new();
        let mut next = span.first;
        while next <= span.last {
            let to = (next + 4096).min(span.last + 1);
            terms.extend(log.entries(next, to)?.iter().map(Entry::term));
            next = to;
        }
        // raft-rs panics on a commit index past the log; refuse the start instead, naming why
        // (found by `testkeeper sim --nemesis corrupt-disk --seed 3`: a flipped length byte in
        // the middle made the rest of the log look like one torn record).
        let held = span.last.max(snap.as_ref().map_or(0, |s| s.index));
        if span.hard.commit > held {
            return Err(LogError::Truncated { last: held, committed: span.hard.commit });
        }
        let mut hard = eraftpb::HardState::default();
        (hard.term, hard.vote, hard.commit) = (span.hard.term, span.hard.vote, span.hard.commit);
        let prior_term = snap.as_ref().filter(|s| s.index + 1 == span.first).map_or(0, |s| s.term);
        let conf = ConfState::from((voters, vec![]));
        Ok(RaftStore { log, terms, prior_term, hard, conf, snap, tail: Tail::default() })
    }

    fn first(&self) -> u64 {
        self.log.first_index()
    }

    fn last(&self) -> u64 {
        self.log.last_index()
    }

    /// Appends entries from a `Ready` (replacing any conflicting suffix) with the hard state,
    /// in one write.
    ///
    /// # Errors
    /// The log cannot be written, or an entry does not decode.
    pub fn append(&mut self, entries: &[RaftEntry], hs: Option<&eraftpb::HardState>) -> Result<(), LogError> {
        if let Some(hs) = hs {
            self.hard = hs.clone();
        }
        if let Some(first) = entries.first() {
            if first.index <= self.last() {
                self.log.truncate_from(first.index)?;
                let keep = first.index.saturating_sub(self.first()) as usize;
                self.terms.truncate(keep);
            }
        }
        let ours = (entries.iter())
            .map(|e| from_raft(e).map_err(|c| LogError::Corrupt { file: "raft".into(), index: e.index, why: c.0 }))
            .collect::<Result<Vec<_>, _>>()?;
        let hard = self.hard_state();
        self.log.append_owned(ours, hard)?;
        self.terms.extend(entries.iter().map(|e| e.term));
        self.tail.appended(entries);
        Ok(())
    }

    /// Records a new commit index (written with the next append).
    pub fn set_commit(&mut self, commit: u64) {
        self.hard.commit = commit;
    }

    /// The hard state in our log's form.
    pub fn hard_state(&self) -> HardState {
        HardState { term: self.hard.term, vote: self.hard.vote, commit: self.hard.commit }
    }

    /// The log's syncer, when appends must be flushed to count.
    pub fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        self.log.syncer()
    }

    /// See [`Log::stored_before_sending`].
    pub fn stored_before_sending(&self) -> bool {
        self.log.stored_before_sending()
    }

    /// The state machine is at `applied`: entries up to there are committed, even where the
    /// hard state's commit index (written with the last append) is older, as after entries
    /// applied on the leader's stored copy (`driver/ahead.rs`) and a snapshot taken there.
    pub fn commit_at_least(&mut self, applied: u64) {
        self.hard.commit = self.hard.commit.max(applied);
    }

    /// A leader's snapshot replaces the log: it continues after the snapshot.
    ///
    /// # Errors
    /// The log cannot be reset.
    pub fn install(&mut self, snap: SnapRef) -> Result<(), LogError> {
        self.log.reset_to(snap.index, snap.term)?;
        self.terms.clear();
        self.tail = Tail::default();
        self.prior_term = snap.term;
        self.hard.commit = self.hard.commit.max(snap.index);
        self.snap = Some(snap);
        Ok(())
    }

    /// A newer snapshot was taken here: lagging followers get it, and the log before
    /// `keep_from` goes.
    ///
    /// # Errors
    /// The log cannot be compacted.
    pub fn snapshot_taken(&mut self, snap: SnapRef, keep_from: u64) -> Result<(), LogError> {
        let keep_from = keep_from.min(snap.index + 1).min(self.last());
        if keep_from > self.first() {
            let drop_n = (keep_from - self.first()) as usize;
            let before = self.terms.get(drop_n - 1).copied().unwrap_or(self.prior_term);
            self.log.compact_to(keep_from)?;
            self.terms.drain(..drop_n);
            self.tail.compacted(keep_from);
            self.prior_term = before;
        }
        self.snap = Some(snap);
        Ok(())
    }

    /// The newest snapshot's index (0: none).
    pub fn snapshot_index(&self) -> u64 {
        self.snap.as_ref().map_or(0, |s| s.index)
    }

    /// Entries `from..to` as ours (to apply after a restart).
    ///
    /// # Errors
    /// An index the log does not hold.
    pub fn our_entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, LogError> {
        self.log.entries(from, to)
    }
}

impl raft::Storage for RaftStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState { hard_state: self.hard.clone(), conf_state: self.conf.clone() })
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _: GetEntriesContext,
    ) -> raft::Result<Vec<RaftEntry>> {
        if low < self.first() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let mut budget = Budget::new(max_size.into());
        if let Some(out) = self.tail.get(low, high, &mut budget) {
            return Ok(out);
        }
        let (mut out, mut next, mut chunk) = (Vec::new(), low, FIRST_READ);
        while next < high {
            let to = (next + chunk).min(high);
            for e in self.log.entries(next, to).map_err(storage)?.iter().map(to_raft) {
                if !budget.take(&e) {
                    return Ok(out);
                }
                out.push(e);
            }
            (next, chunk) = (to, (chunk * 2).min(LARGEST_READ));
        }
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let first = self.first();
        if idx + 1 == first {
            return Ok(self.prior_term);
        }
        if idx < first {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        self.terms.get((idx - first) as usize).copied().ok_or(raft::Error::Store(StorageError::Unavailable))
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last())
    }

    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        let Some(s) = self.snap.as_ref().filter(|s| s.index >= request_index) else {
            return Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable));
        };
        // Shared, not copied: a large tree's snapshot is hundreds of MB, and the leader's
        // driver builds this message on its own thread.
        let mut snap = Snapshot { data: Bytes::from_owner(ArcBody(s.body.clone())), ..Default::default() };
        let meta = snap.mut_metadata();
        (meta.index, meta.term) = (s.index, s.term);
        meta.set_conf_state(self.conf.clone());
        Ok(snap)
    }
}

#[cfg(test)]
mod tests;
