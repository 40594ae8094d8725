//! A simulated disk for crash tests: the log is one byte stream of records with a known fsync
//! boundary. A simulated crash keeps what was synced and loses the rest, or, torn, keeps a
//! cut-off piece of the first unsynced record as a power cut mid-write would. sled cannot be
//! made to do either on demand; this backend makes every such crash reproducible from a seed.
//!
//! The disk outlives the log that writes it: a test crashes the server, opens a new log on the
//! same [`SimDisk`], and recovery must reach the last durable entry.

use std::sync::{Arc, Mutex, MutexGuard};

use testkeeper_core::txn::Entry;
use tracing::warn;

use super::record::{self, RecordError};
use super::sled::Meta;
use super::{HardState, Log, LogError, Span, Syncer};

/// The name recovery messages use for the simulated log.
const NAME: &str = "sim-log";

#[derive(Debug, Default)]
struct Disk {
    /// Records, back to back, as written.
    bytes: Vec<u8>,
    /// Bytes covered by the last sync: what survives a crash.
    synced: usize,
    /// Index of the first record in `bytes` (after compaction).
    first: u64,
    hard: HardState,
    hard_synced: HardState,
    meta: Option<Meta>,
    /// Last index appended, and last index synced.
    appended: u64,
    synced_index: u64,
    /// Deliberately broken (`Broken::AckBeforeDurable`): a sync makes durable only what the
    /// sync before it asked for, and remembers what this one asked for here (bytes, hard
    /// state, index).
    lie: bool,
    asked: Option<(usize, HardState, u64)>,
    /// Free space below the server's margin (`--keep-free-space-bytes`): the disk guard sees
    /// it, and appends take from `room` until it runs out.
    full: bool,
    /// Bytes still free while `full`: an append that does not fit fails, as ENOSPC would.
    room: usize,
}

/// What a full simulated disk still takes: the margin a real server keeps free, for what was
/// already on its way to the disk when the guard saw the disk fill.
pub const SIM_MARGIN: usize = 64 * 1024;

/// What an append on a full simulated disk fails with.
fn no_space() -> LogError {
    LogError::Io { what: "no space left on device (the simulated disk is full)".into() }
}

/// A disk shared by every log opened on it (one at a time).
#[derive(Debug, Clone, Default)]
pub struct SimDisk {
    inner: Arc<Mutex<Disk>>,
}

impl SimDisk {
    /// An empty disk.
    pub fn new() -> SimDisk {
        SimDisk::default()
    }

    /// An empty disk; with `Broken::AckBeforeDurable` its flushes report success while the
    /// durable point stays one flush behind (the chaos checkers' self-test).
    pub fn with_broken(broken: Option<crate::broken::Broken>) -> SimDisk {
        let disk = SimDisk::default();
        disk.disk().lie = broken == Some(crate::broken::Broken::AckBeforeDurable);
        disk
    }

    fn disk(&self) -> MutexGuard<'_, Disk> {
        self.inner.lock().expect("sim disk")
    }

    /// A crash: everything not synced is lost. With `tear`, the first unsynced record
    /// survives cut short (half of it), as a write torn by a power cut.
    pub fn crash(&self, tear: bool) {
        let mut d = self.disk();
        let keep = if tear && d.bytes.len() > d.synced {
            let unsynced = d.bytes.len() - d.synced;
            let first_len = record::decode(&d.bytes[d.synced..]).map_or(unsynced, |(_, n)| n);
            d.synced + (first_len / 2).max(1)
        } else {
            d.synced
        };
        d.bytes.truncate(keep);
        d.hard = d.hard_synced;
        d.appended = d.synced_index;
        d.asked = None;
    }

    /// Erases the disk, as deleting a data directory would (`TestKeeper::reset`).
    pub fn wipe(&self) {
        *self.disk() = Disk::default();
    }

    /// The last index a sync covered.
    pub fn synced_index(&self) -> u64 {
        self.disk().synced_index
    }

    /// Fills the disk (`true`) down to [`SIM_MARGIN`] bytes, the margin the server's disk guard
    /// keeps: appends beyond that fail until the disk is emptied again (`false`).
    pub fn set_full(&self, full: bool) {
        let mut d = self.disk();
        (d.full, d.room) = (full, SIM_MARGIN);
    }

    /// Whether free space is below the margin (what the server's disk guard reads).
    pub fn is_full(&self) -> bool {
        self.disk().full
    }

    /// Flips one bit of byte `offset` of the log stream (a test of corruption in the middle).
    pub fn flip_byte(&self, offset: usize) {
        let mut d = self.disk();
        if let Some(b) = d.bytes.get_mut(offset) {
            *b ^= 0x10;
        }
    }

    /// Flips one bit of a byte of some record that is not the last one, chosen by `pick`: a
    /// corruption recovery must refuse, since the records after it are whole (a damaged last
    /// record is indistinguishable from a torn write, and is dropped). Returns the offset, or
    /// `None` with fewer than two records on the disk.
    pub fn corrupt(&self, pick: u64) -> Option<usize> {
        let last_start = {
            let d = self.disk();
            let (mut at, mut last_start) = (0, None);
            while let Ok((_, n)) = record::decode(&d.bytes[at..]) {
                if at + n >= d.bytes.len() {
                    last_start = Some(at);
                    break;
                }
                at += n;
            }
            last_start.filter(|s| *s > 0)?
        };
        let offset = (pick % last_start as u64) as usize;
        self.flip_byte(offset);
        Some(offset)
    }

    /// Bytes in the log stream.
    pub fn len(&self) -> usize {
        self.disk().bytes.len()
    }

    /// Whether the stream is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The log on a [`SimDisk`].
pub struct SimLog {
    disk: SimDisk,
    /// Byte offset of each record from `first` on.
    offsets: Vec<usize>,
    first: u64,
    last: u64,
    last_term: u64,
    hard: HardState,
}

struct SimSyncer {
    disk: SimDisk,
}

impl Syncer for SimSyncer {
    fn sync(&self) -> Result<u64, LogError> {
        let mut d = self.disk.disk();
        if d.full && d.room == 0 {
            return Err(no_space());
        }
        if d.lie {
            let now = (d.bytes.len(), d.hard, d.appended);
            if let Some((bytes, hard, index)) = d.asked.replace(now) {
                (d.synced, d.hard_synced, d.synced_index) = (bytes, hard, index);
            }
            return Ok(d.appended);
        }
        d.synced = d.bytes.len();
        d.hard_synced = d.hard;
        d.synced_index = d.appended;
        Ok(d.appended)
    }
}

impl SimLog {
    /// Opens the log on `disk` with the same rules as the sled log: a torn last record is
    /// dropped with a warning, anything else that does not verify refuses to open.
    ///
    /// # Errors
    /// A record other than the last that does not verify, or a gap in the indexes.
    pub fn open(disk: &SimDisk) -> Result<(SimLog, Option<Meta>, Vec<String>), LogError> {
        let mut d = disk.disk();
        let mut offsets = Vec::new();
        let mut warnings = Vec::new();
        let (mut at, mut last, mut last_term) = (0, 0u64, 0);
        let mut first = 0;
        while at < d.bytes.len() {
            match record::decode(&d.bytes[at..]) {
                Ok((e, n)) => {
                    if last != 0 && e.index() != last + 1 {
                        return Err(LogError::Gap { file: NAME.into(), after: last, next: e.index() });
                    }
                    if first == 0 {
                        first = e.index();
                    }
                    offsets.push(at);
                    (last, last_term) = (e.index(), e.term());
                    at += n;
                }
                Err(why) => {
                    // Torn: cut short, or whole-looking but wrong with nothing after it. A
                    // damaged length can make a record in the middle reach past the end, so
                    // "nothing after it" is checked by looking for the next record too.
                    let extent = record::extent(&d.bytes[at..]);
                    let is_last = extent.is_none_or(|n| at + n >= d.bytes.len())
                        && !record::whole_record_follows(&d.bytes[at..], last + 2);
                    let torn = is_last && matches!(why, RecordError::Short { .. } | RecordError::Checksum { .. });
                    // The record's place says its index; a damaged header may claim another.
                    let index = last + 1;
                    if !torn {
                        let why = match record::claimed_index(&d.bytes[at..]).filter(|i| *i != index) {
                            Some(claimed) => format!("{why} (its header claims index {claimed})"),
                            None => why.to_string(),
                        };
                        return Err(LogError::Corrupt { file: NAME.into(), index, why });
                    }
                    // A torn write loses only what was never synced, and the hard state (synced
                    // with its entries) says how far that is: a cut before a committed index is
                    // a damaged record in the middle (a bad length makes all the rest look like
                    // one torn record), refused with the disk left as it was.
                    if last < d.hard.commit {
                        let why = format!("{why}, and index {} was committed: not a torn write", d.hard.commit);
                        return Err(LogError::Corrupt { file: NAME.into(), index, why });
                    }
                    let w = format!("{NAME}: the last log record (index {}) is torn ({why}); dropping it", last + 1);
                    warn!("{w}");
                    warnings.push(w);
                    d.bytes.truncate(at);
                    d.synced = d.synced.min(at);
                }
            }
        }
        if first == 0 {
            first = d.first.max(d.hard.commit + 1);
            last = first - 1;
        }
        d.first = first;
        d.appended = last;
        d.synced_index = last;
        d.synced = d.bytes.len();
        d.asked = None;
        let (hard, meta) = (d.hard, d.meta.clone());
        drop(d);
        Ok((SimLog { disk: disk.clone(), offsets, first, last, last_term, hard }, meta, warnings))
    }

    /// Writes the metadata of a new data directory (durable at once, as `write_meta` is).
    pub fn write_meta(&self, meta: &Meta) {
        self.disk.disk().meta = Some(meta.clone());
    }
}

impl Log for SimLog {
    fn append(&mut self, entries: &[Entry], hard: HardState) -> Result<(), LogError> {
        let mut d = self.disk.disk();
        if d.full {
            let mut need = Vec::new();
            for e in entries {
                record::encode(e, &mut need);
            }
            if need.len() > d.room {
                d.room = 0;
                return Err(no_space());
            }
            d.room -= need.len();
        }
        for e in entries {
            assert_eq!(e.index(), self.last + 1, "invariant: log appends are contiguous");
            self.offsets.push(d.bytes.len());
            record::encode(e, &mut d.bytes);
            self.last = e.index();
            self.last_term = e.term();
        }
        d.hard = hard;
        d.appended = self.last;
        self.hard = hard;
        Ok(())
    }

    fn entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, LogError> {
        if from < self.first || to > self.last + 1 || from > to {
            return Err(LogError::Unavailable { index: from, first: self.first, last: self.last });
        }
        let d = self.disk.disk();
        (from..to)
            .map(|i| {
                let at = self.offsets[(i - self.first) as usize];
                record::decode(&d.bytes[at..]).map(|(e, _)| e).map_err(|why| LogError::Corrupt {
                    file: NAME.into(),
                    index: i,
                    why: why.to_string(),
                })
            })
            .collect()
    }

    fn truncate_from(&mut self, index: u64) -> Result<(), LogError> {
        if index > self.last {
            return Ok(());
        }
        let keep = (index.max(self.first) - self.first) as usize;
        let cut = self.offsets.get(keep).copied();
        self.offsets.truncate(keep);
        let mut d = self.disk.disk();
        if let Some(cut) = cut {
            d.bytes.truncate(cut);
            d.synced = d.synced.min(cut);
        }
        self.last = index.max(self.first) - 1;
        d.appended = self.last;
        d.synced_index = d.synced_index.min(self.last);
        let (len, last) = (d.bytes.len(), self.last);
        if let Some(a) = d.asked.as_mut() {
            (a.0, a.2) = (a.0.min(len), a.2.min(last));
        }
        drop(d);
        self.last_term = self
            .entries(self.last, self.last + 1)
            .ok()
            .and_then(|v| v.first().map(Entry::term))
            .unwrap_or(self.last_term);
        Ok(())
    }

    fn compact_to(&mut self, index: u64) -> Result<(), LogError> {
        let upto = index.min(self.last);
        if upto <= self.first {
            return Ok(());
        }
        let drop_n = (upto - self.first) as usize;
        let cut = self.offsets[drop_n];
        let mut d = self.disk.disk();
        d.bytes.drain(..cut);
        d.synced = d.synced.saturating_sub(cut);
        if let Some(a) = d.asked.as_mut() {
            a.0 = a.0.saturating_sub(cut);
        }
        d.first = upto;
        self.offsets.drain(..drop_n);
        for o in &mut self.offsets {
            *o -= cut;
        }
        self.first = upto;
        Ok(())
    }

    fn reset_to(&mut self, index: u64, term: u64) -> Result<(), LogError> {
        let mut d = self.disk.disk();
        d.bytes.clear();
        (d.synced, d.first, d.appended, d.synced_index) = (0, index + 1, index, index);
        d.hard.commit = d.hard.commit.max(index);
        d.hard_synced = d.hard;
        d.asked = None;
        self.hard = d.hard;
        drop(d);
        self.offsets.clear();
        (self.first, self.last, self.last_term) = (index + 1, index, term);
        Ok(())
    }

    fn span(&self) -> Span {
        Span { first: self.first, last: self.last, last_term: self.last_term, hard: self.hard }
    }

    fn persistent(&self) -> bool {
        true
    }

    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        Some(Arc::new(SimSyncer { disk: self.disk.clone() }))
    }

    fn stored_before_sending(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
