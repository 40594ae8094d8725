//! The durable log on sled 0.34: one database per server, one tree, keys that sort by index.
//!
//! | key | value |
//! |---|---|
//! | `e` + index (u64, big-endian) | a chunk: the records from that index on, back to back (`chunk`, `record`: each checksummed, versioned) |
//! | `m/hard` | the hard state: term, vote, commit (u64 LE each) + CRC-32 |
//! | `m/meta` | the server's metadata ([`Meta`]) + CRC-32 |
//!
//! The guards sled needs (its own README calls it beta, and abrupt stops have corrupted it):
//! entries (and the hard state with them, when it changed) go into sled in one write; an
//! entry counts as durable only after a `flush` that started after that write; every value
//! carries our own checksum; and on open the indexes must be contiguous, every record must
//! verify (a torn last record is dropped with a warning, anything else refuses to start), and
//! the commit index must lie inside the log.
//!
//! The hard state is written with appended entries only when its term or vote changed, and
//! by every append of no entries (Raft's own hard-state updates), compaction and reset. A
//! commit index that moved alone stays in memory until then, so on disk it may lag: that is
//! safe, since a standalone server replays every entry its log holds, and a cluster node
//! replays up to it and learns the rest from Raft. Writing it every time cost a second sled
//! key per flush: sled then writes a batch manifest and the batch as two buffers, each with
//! its own `sync_file_range`, and one write per session took 0.23 ms to flush instead of
//! 0.14 (`testkeeper bench --durable`, one session; docs/performance.md).
//!
//! What `flush` promises: sled writes its buffers and calls `sync_file_range` (spacejam/sled
//! #1452), not a full `fsync`: a flushed entry survives the process being killed, but not
//! necessarily a power loss (docs/persistence.md).
//!
//! Write-behind (`--fsync always`): an append only stages its records; the syncer moves
//! everything staged into sled in one batch and then flushes. sled's cost is per batch and per
//! key, so one batch per flush cycle, whatever the number of sessions whose writes it carries,
//! is what keeps group commit cheap; and the engine's lock never waits on sled. Without
//! write-behind (`--fsync never`, where nobody flushes) an append writes its batch at once.
//!
//! # Layout
//! - this file: [`SledLog`] and the [`Log`] operations.
//! - `open`: opening and verifying, and the one repair a start makes once recovery verified.
//! - `store`: what the log and the syncer share (staged records, the write lock) and the
//!   syncer.
//! - `values`: keys and sealed values (entry keys, the hard state, [`Meta`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use testkeeper_core::txn::Entry;
use tracing::warn;

mod open;
mod store;
mod values;

pub use open::Opened;

use store::{SledSyncer, Store};
pub use values::Meta;
use values::{hard_bytes, index_of, io, key, sealed, HARD, META};

use super::chunk;
use super::{HardState, Log, LogError, Span, Syncer};

/// The log of one server in a sled database.
pub struct SledLog {
    dir: PathBuf,
    first: u64,
    last: u64,
    last_term: u64,
    hard: HardState,
    store: Arc<Store>,
    /// Stage appends for the syncer (`--fsync always`) instead of writing them at once.
    write_behind: bool,
    /// Removes the records a compaction dropped, off the engine's lock (see `compact_to`).
    compactor: Option<std::thread::JoinHandle<()>>,
    /// A torn last record found by `open`: its chunk's key and the bytes before it, cut by
    /// `finish_open` once recovery has verified everything (a refused start writes nothing).
    torn: Option<(sled::IVec, usize)>,
}

/// Chunks removed per sled batch by the compactor thread.
const COMPACT_BATCH: usize = 1024;

impl Drop for SledLog {
    fn drop(&mut self) {
        // The database must be closed before the directory is opened again (a restart).
        self.await_compactor();
    }
}

impl SledLog {
    /// Waits for the compactor thread, if one runs.
    fn await_compactor(&mut self) {
        if let Some(h) = self.compactor.take() {
            if h.join().is_err() {
                warn!("the log compactor thread panicked; its records stay below the snapshot");
            }
        }
    }

    /// Writes the metadata of a new data directory, durably.
    ///
    /// # Errors
    /// The storage's failure.
    pub fn write_meta(&self, meta: &Meta) -> Result<(), LogError> {
        let db = &self.store.db;
        db.insert(META, sealed(&meta.encode())).map_err(|e| io("writing metadata", e))?;
        db.flush().map_err(|e| io("flushing metadata", e))?;
        Ok(())
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of the chunk that holds `index`, if one does.
    fn chunk_of(&self, index: u64) -> Result<Option<u64>, LogError> {
        match self.store.db.range(..=key(index)).next_back() {
            Some(kv) => {
                let (k, _) = kv.map_err(|e| io("reading the log", e))?;
                Ok((k.first() == Some(&b'e') && k.len() == 9).then(|| index_of(&k)))
            }
            None => Ok(None),
        }
    }

    fn corrupt(&self, bad: chunk::BadRecord) -> LogError {
        LogError::Corrupt { file: self.dir.display().to_string(), index: bad.index, why: bad.why.to_string() }
    }
}

impl Log for SledLog {
    fn append(&mut self, entries: &[Entry], hard: HardState) -> Result<(), LogError> {
        let Some(last) = entries.last() else {
            if self.write_behind {
                self.store.staged.lock().expect("staged records").1 = Some(hard);
            } else {
                self.store.db.insert(HARD, hard_bytes(hard)).map_err(|e| io("writing the hard state", e))?;
            }
            self.hard = hard;
            return Ok(());
        };
        {
            let mut staged = self.store.staged.lock().expect("staged records");
            for e in entries {
                assert_eq!(e.index(), self.last + 1, "invariant: log appends are contiguous");
                staged.0.push(e);
                self.last = e.index();
            }
            // The hard state goes with the records only when its term or vote changed (or one
            // is staged already, which then stays the newest): a commit index alone is not
            // worth its own sled key in every flush (see the module's header).
            if (hard.term, hard.vote) != (self.hard.term, self.hard.vote) || staged.1.is_some() {
                staged.1 = Some(hard);
            }
        }
        (self.last_term, self.hard) = (last.term(), hard);
        self.store.appended.store(self.last, Ordering::Release);
        if !self.write_behind {
            let w = self.store.writing();
            self.store.write_staged(&w)?;
        }
        Ok(())
    }

    fn entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, LogError> {
        if from < self.first || to > self.last + 1 || from > to {
            return Err(LogError::Unavailable { index: from, first: self.first, last: self.last });
        }
        let mut out = Vec::with_capacity((to - from) as usize);
        if from == to {
            return Ok(out);
        }
        // Reading the unflushed tail writes it into sled first (not flushed): a read is rare
        // next to appends (a Raft follower catching up, a truncation's last term).
        let w = self.store.writing();
        self.store.write_staged(&w)?;
        let name = self.dir.display().to_string();
        let start = self.chunk_of(from)?.unwrap_or(from);
        let mut next = start;
        for kv in self.store.db.range(key(start)..key(to)) {
            let (k, v) = kv.map_err(|e| io("reading the log", e))?;
            let index = index_of(&k);
            if index != next {
                return Err(LogError::Gap { file: name, after: next.saturating_sub(1), next: index });
            }
            next = chunk::decode(index, &v, from, to, &mut out).map_err(|bad| self.corrupt(bad))?;
        }
        if out.len() as u64 != to - from {
            return Err(LogError::Gap { file: name, after: from + out.len() as u64, next: to });
        }
        Ok(out)
    }

    fn truncate_from(&mut self, index: u64) -> Result<(), LogError> {
        self.await_compactor();
        let index = index.max(self.first);
        if index <= self.last {
            let w = self.store.writing();
            self.store.write_staged(&w)?;
            let db = &self.store.db;
            let mut batch = sled::Batch::default();
            for kv in db.range(key(index)..) {
                let (k, _) = kv.map_err(|e| io("reading the log", e))?;
                if k.first() == Some(&b'e') {
                    batch.remove(k);
                }
            }
            // The chunk that holds `index` and starts before it keeps the records before it.
            if let Some(start) = self.chunk_of(index.saturating_sub(1))?.filter(|s| *s < index) {
                if let Some(v) = db.get(key(start)).map_err(|e| io("reading the log", e))? {
                    batch.insert(&key(start)[..], chunk::prefix(&v, index - start));
                }
            }
            db.apply_batch(batch).map_err(|e| io("truncating the log", e))?;
        }
        self.last = self.last.min(index.saturating_sub(1)).max(self.first - 1);
        self.last_term = match self.entries(self.last, self.last + 1) {
            Ok(v) => v.first().map_or(self.last_term, Entry::term),
            Err(_) => self.last_term,
        };
        self.store.appended.store(self.last, Ordering::Release);
        Ok(())
    }

    fn compact_to(&mut self, index: u64) -> Result<(), LogError> {
        // The last entry always stays, so a reopened log knows where it ends.
        let upto = index.min(self.last);
        if upto <= self.first {
            return Ok(());
        }
        // The log ends below `upto` now; its chunks go on a thread, because this runs under
        // the engine's lock and removing a million records took seconds (every request
        // waited). A chunk goes once the next one starts at or below `upto`, in ascending
        // batches, so what a crash leaves is a contiguous log that starts later below the
        // snapshot: one compacted less, which recovery already reads. The chunk that holds
        // `upto` stays whole. One compactor at a time keeps it so.
        self.await_compactor();
        {
            // Staged chunks below `upto` must be in sled for the compactor to see them.
            let w = self.store.writing();
            self.store.write_staged(&w)?;
        }
        let store = self.store.clone();
        self.first = upto;
        let work = move || {
            let mut batch = sled::Batch::default();
            let mut queued = 0;
            let mut previous: Option<sled::IVec> = None;
            for kv in store.db.range(key(0)..=key(upto)) {
                let k = match kv {
                    Ok((k, _)) => k,
                    Err(e) => {
                        warn!(error = %e, upto, "reading the log to compact it failed; its records stay below the snapshot");
                        return;
                    }
                };
                if let Some(p) = previous.replace(k) {
                    batch.remove(p);
                    queued += 1;
                }
                if queued == COMPACT_BATCH {
                    if let Err(e) = store.db.apply_batch(std::mem::take(&mut batch)) {
                        warn!(error = %e, upto, "removing compacted log records failed; they stay below the snapshot");
                        return;
                    }
                    queued = 0;
                }
            }
            if let Err(e) = store.db.apply_batch(batch) {
                warn!(error = %e, upto, "removing compacted log records failed; they stay below the snapshot");
            }
        };
        let handle = std::thread::Builder::new()
            .name("testkeeper-compactor".into())
            .spawn(work)
            .map_err(|e| io("starting the log compactor", e))?;
        self.compactor = Some(handle);
        Ok(())
    }

    fn reset_to(&mut self, index: u64, term: u64) -> Result<(), LogError> {
        self.await_compactor();
        let w = self.store.writing();
        self.store.discard_staged(&w);
        let db = &self.store.db;
        let mut batch = sled::Batch::default();
        for kv in db.scan_prefix(b"e") {
            let (k, _) = kv.map_err(|e| io("scanning the log", e))?;
            batch.remove(k);
        }
        let hard = HardState { commit: self.hard.commit.max(index), ..self.hard };
        batch.insert(HARD, hard_bytes(hard));
        db.apply_batch(batch).map_err(|e| io("resetting the log to a snapshot", e))?;
        db.flush().map_err(|e| io("flushing the log", e))?;
        drop(w);
        (self.first, self.last, self.last_term, self.hard) = (index + 1, index, term, hard);
        self.store.appended.store(index, Ordering::Release);
        Ok(())
    }

    fn span(&self) -> Span {
        Span { first: self.first, last: self.last, last_term: self.last_term, hard: self.hard }
    }

    fn persistent(&self) -> bool {
        true
    }

    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        Some(Arc::new(SledSyncer { store: self.store.clone() }))
    }

    fn finish_open(&mut self) -> Result<(), LogError> {
        self.drop_torn()
    }
}
