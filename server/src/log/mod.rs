//! The log: entries in index order, behind one [`Log`] abstraction with three backends.
//!
//! - [`memory::MemLog`]: in memory, bounded; an append is as durable as it will ever be.
//! - [`sled::SledLog`]: one sled database per server; entries and the hard state are written
//!   in one batch, and an entry counts as durable only after a `flush` that started after it
//!   was written (group commit: one flush covers every append before it). With `--fsync
//!   always` the syncer writes what was appended during the last flush as one batch right
//!   before the next flush, so the engine's lock never waits on sled.
//! - [`sim::SimLog`]: a simulated disk for tests that knows its fsync boundary and, on a
//!   simulated crash, loses the unsynced tail or tears the last record.
//!
//! Every stored record is versioned and checksummed (`record`); what is inside is the core's
//! entry encoding (`testkeeper_core::codec`).
//!
//! # Layout
//! - this file: [`Log`], [`Syncer`], [`HardState`], [`LogError`].
//! - `record`: the on-disk record framing (version, checksum, index, term, payload).
//! - `chunk`: runs of consecutive records, the values the sled log stores.
//! - `memory`, `sled`, `sim`: the backends.

pub mod chunk;
pub mod memory;
pub mod record;
pub mod sim;
pub mod sled;

use std::fmt;
use std::sync::Arc;

use testkeeper_core::txn::Entry;

/// Raft's persistent state besides the entries (term, vote, commit), and ours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HardState {
    pub term: u64,
    pub vote: u64,
    pub commit: u64,
}

/// What a log holds: entries `first..=last` (none when `first > last`), the term of the last
/// one, and the hard state appended with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    pub first: u64,
    pub last: u64,
    pub last_term: u64,
    pub hard: HardState,
}

/// Why the log cannot be read or written. Every variant names where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogError {
    /// The storage itself failed (I/O, sled).
    Io { what: String },
    /// A record failed its checksum or did not decode.
    Corrupt { file: String, index: u64, why: String },
    /// Records are missing between two indexes.
    Gap { file: String, after: u64, next: u64 },
    /// An index outside what the log holds was asked for.
    Unavailable { index: u64, first: u64, last: u64 },
    /// The log ends before an index its own hard state records as committed: entries that
    /// were synced are gone (a corrupted log cut short, not a torn write, which only loses
    /// what was never synced).
    Truncated { last: u64, committed: u64 },
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Io { what } => write!(f, "log storage failed: {what}"),
            LogError::Corrupt { file, index, why } => {
                write!(f, "{file}: log record at index {index} is corrupt: {why}")
            }
            LogError::Gap { file, after, next } => {
                write!(f, "{file}: log indexes are not contiguous: index {after} is followed by {next}")
            }
            LogError::Unavailable { index, first, last } => {
                write!(f, "log index {index} is not held (the log holds {first}..={last})")
            }
            LogError::Truncated { last, committed } => write!(
                f,
                "the log ends at index {last}, but its hard state records index {committed} as committed: \
                 committed entries are missing (a corrupted log, not a torn write)"
            ),
        }
    }
}

impl std::error::Error for LogError {}

/// Makes appended entries durable, from any thread: the engine appends under its lock and a
/// syncer thread flushes outside it, so one flush covers every append that came before it.
pub trait Syncer: Send + Sync {
    /// Makes durable everything appended before the call; returns the last index now durable.
    ///
    /// # Errors
    /// The storage's failure: the entries after the durable index must not be acknowledged.
    fn sync(&self) -> Result<u64, LogError>;
}

/// An ordered, contiguous sequence of entries from `first_index()` to `last_index()`.
pub trait Log: Send {
    /// Appends `entries`, which must follow `last_index()` contiguously, with `hard` as the
    /// hard state, in one write. They are durable once a [`Syncer`] says so (or at once, when
    /// the backend has none).
    ///
    /// # Errors
    /// The storage's failure.
    fn append(&mut self, entries: &[Entry], hard: HardState) -> Result<(), LogError>;

    /// [`append`](Log::append) of entries the caller no longer needs: a log that keeps
    /// entries as they are (memory) takes them instead of a copy.
    ///
    /// # Errors
    /// The storage's failure.
    fn append_owned(&mut self, entries: Vec<Entry>, hard: HardState) -> Result<(), LogError> {
        self.append(&entries, hard)
    }

    /// Entries with `from <= index < to`.
    ///
    /// # Errors
    /// An index the log no longer (or never) held, or a record that does not verify.
    fn entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, LogError>;

    /// Removes every entry from `index` on (a follower's conflicting suffix).
    ///
    /// # Errors
    /// The storage's failure.
    fn truncate_from(&mut self, index: u64) -> Result<(), LogError>;

    /// Removes every entry before `index` (covered by a snapshot).
    ///
    /// # Errors
    /// The storage's failure.
    fn compact_to(&mut self, index: u64) -> Result<(), LogError>;

    /// Drops every entry: the log now continues after a snapshot at `index` (taken in `term`)
    /// that a Raft leader sent.
    ///
    /// # Errors
    /// The storage's failure.
    fn reset_to(&mut self, index: u64, term: u64) -> Result<(), LogError>;

    /// Which indexes the log holds, and its hard state.
    fn span(&self) -> Span;

    /// The first index held (`last_index() + 1` when empty).
    fn first_index(&self) -> u64 {
        self.span().first
    }

    /// The last index held (the snapshot's, when empty after compaction).
    fn last_index(&self) -> u64 {
        self.span().last
    }

    /// The term of the last entry.
    fn last_term(&self) -> u64 {
        self.span().last_term
    }

    /// The hard state last appended.
    fn hard_state(&self) -> HardState {
        self.span().hard
    }

    /// Whether entries survive the process (a restart finds them).
    fn persistent(&self) -> bool;

    /// The syncer, for backends whose appends are not durable until flushed.
    fn syncer(&self) -> Option<Arc<dyn Syncer>>;

    /// Whether a Raft leader appends (and flushes) entries before it sends the messages that
    /// carry them, so a follower may count the leader's copy as stored. True where that costs
    /// nothing (memory, the simulated disk); a real disk's flush runs beside the sending.
    fn stored_before_sending(&self) -> bool {
        false
    }

    /// Recovery verified everything (the log, the snapshot, the replay): the first write
    /// allowed, a repair found while opening (sled: dropping a torn last record). Until then
    /// a start that is refused has left the directory as it was.
    ///
    /// # Errors
    /// The storage's failure.
    fn finish_open(&mut self) -> Result<(), LogError> {
        Ok(())
    }
}
