//! The durable log on sled 0.34: one database per server, one tree, keys that sort by index.
//!
//! | key | value |
//! |---|---|
//! | `e` + index (u64, big-endian) | one log record (`record`: checksummed, versioned) |
//! | `m/hard` | the hard state: term, vote, commit (u64 LE each) + CRC-32 |
//! | `m/meta` | the server's metadata ([`Meta`]) + CRC-32 |
//!
//! The guards sled needs (its own README calls it beta, and abrupt stops have corrupted it):
//! every append writes its entries and the hard state in one `apply_batch`; an entry counts as
//! durable only after a `flush` that started after that batch; every value carries our own
//! checksum; and on open the indexes must be contiguous, every record must verify (a torn last
//! record is dropped with a warning, anything else refuses to start), and the commit index
//! must lie inside the log.
//!
//! What `flush` promises: sled writes its buffers and calls `sync_file_range` (spacejam/sled
//! #1452), not a full `fsync`: a flushed entry survives the process being killed, but not
//! necessarily a power loss (docs/persistence.md).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use testkeeper_core::txn::Entry;
use tracing::warn;

use super::record::{self, RecordError};
use super::{HardState, Log, LogError, Span, Syncer};

const META: &[u8] = b"m/meta";
const HARD: &[u8] = b"m/hard";

fn key(index: u64) -> [u8; 9] {
    let mut k = [b'e'; 9];
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}

fn index_of(k: &[u8]) -> u64 {
    u64::from_be_bytes(k[1..9].try_into().expect("entry keys are 9 bytes"))
}

fn io(what: &str, e: impl std::fmt::Display) -> LogError {
    LogError::Io { what: format!("{what}: {e}") }
}

/// A value with a CRC-32 of it appended.
fn sealed(value: &[u8]) -> Vec<u8> {
    let mut v = value.to_vec();
    v.extend_from_slice(&crc32fast::hash(value).to_le_bytes());
    v
}

/// The value of a sealed record, if its checksum holds.
fn unseal(v: &[u8]) -> Option<&[u8]> {
    let (value, crc) = v.split_at(v.len().checked_sub(4)?);
    (crc32fast::hash(value).to_le_bytes() == crc).then_some(value)
}

/// What a data directory was created with, and the choices replay depends on: the flavor and
/// digest setting a state is rebuilt with, the ZooKeeper session-id base, and the system nodes'
/// data of the initial tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub flavor: String,
    pub digest_enabled: bool,
    pub zk_session_base: i64,
    /// Data of `/keeper/feature_flags` and `/keeper/api_version` in the initial tree.
    pub feature_flags: Vec<u8>,
    pub api_version: Vec<u8>,
}

impl Meta {
    const VERSION: u8 = 1;

    fn encode(&self) -> Vec<u8> {
        let mut v = vec![Self::VERSION];
        v.extend_from_slice(&(self.flavor.len() as u32).to_le_bytes());
        v.extend_from_slice(self.flavor.as_bytes());
        v.push(u8::from(self.digest_enabled));
        v.extend_from_slice(&self.zk_session_base.to_le_bytes());
        for b in [&self.feature_flags, &self.api_version] {
            v.extend_from_slice(&(b.len() as u32).to_le_bytes());
            v.extend_from_slice(b);
        }
        v
    }

    fn decode(v: &[u8]) -> Option<Meta> {
        let mut r = testkeeper_core::codec::Reader::new(v);
        (r.u8().ok()? == Self::VERSION).then_some(())?;
        let flavor = r.string().ok()?;
        let digest_enabled = r.u8().ok()? != 0;
        let zk_session_base = r.i64().ok()?;
        let feature_flags = r.blob().ok()?.to_vec();
        let api_version = r.blob().ok()?.to_vec();
        r.end().ok()?;
        Some(Meta { flavor, digest_enabled, zk_session_base, feature_flags, api_version })
    }
}

/// The log of one server in a sled database.
pub struct SledLog {
    dir: PathBuf,
    db: sled::Db,
    first: u64,
    last: u64,
    last_term: u64,
    hard: HardState,
    appended: Arc<AtomicU64>,
    syncer: Arc<SledSyncer>,
    /// Removes the records a compaction dropped, off the engine's lock (see `compact_to`).
    compactor: Option<std::thread::JoinHandle<()>>,
}

/// Records removed per sled batch by the compactor thread.
const COMPACT_CHUNK: u64 = 4096;

/// Flushes the database from the syncer thread.
struct SledSyncer {
    db: sled::Db,
    appended: Arc<AtomicU64>,
}

impl Syncer for SledSyncer {
    fn sync(&self) -> Result<u64, LogError> {
        // Everything appended before this load is in sled's buffers; the flush covers it.
        let target = self.appended.load(Ordering::Acquire);
        self.db.flush().map_err(|e| io("flushing the log", e))?;
        Ok(target)
    }

    fn appended(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }
}

/// A log as found on disk, with what was repaired.
pub struct Opened {
    pub log: SledLog,
    /// The metadata, `None` for a database that never had any (new, or emptied).
    pub meta: Option<Meta>,
    /// Warnings to log: a torn last record that was dropped.
    pub warnings: Vec<String>,
}

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

    /// Opens (or creates) the database in `dir` and verifies it.
    ///
    /// # Errors
    /// The database cannot be opened, or it does not verify: a record other than the last
    /// fails its checksum, indexes are not contiguous, the metadata or hard state is corrupt,
    /// or the commit index lies beyond the log. Nothing is changed on disk then.
    pub fn open(dir: &Path) -> Result<Opened, LogError> {
        let name = dir.display().to_string();
        let db = sled::Config::new()
            .path(dir)
            .flush_every_ms(Some(500))
            .open()
            .map_err(|e| io(&format!("opening {name}"), e))?;
        let meta = match db.get(META).map_err(|e| io("reading metadata", e))? {
            None => None,
            Some(v) => Some(unseal(&v).and_then(Meta::decode).ok_or_else(|| LogError::Corrupt {
                file: name.clone(),
                index: 0,
                why: "the metadata record fails its checksum".into(),
            })?),
        };
        let hard = match db.get(HARD).map_err(|e| io("reading the hard state", e))? {
            None => HardState::default(),
            Some(v) => {
                let bad = || LogError::Corrupt {
                    file: name.clone(),
                    index: 0,
                    why: "the hard state fails its checksum".into(),
                };
                let b = unseal(&v).filter(|b| b.len() == 24).ok_or_else(bad)?;
                let u = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
                HardState { term: u(0), vote: u(8), commit: u(16) }
            }
        };
        let mut warnings = Vec::new();
        let (mut first, mut last, mut last_term) = (0, 0, 0);
        let mut iter = db.scan_prefix(b"e").peekable();
        while let Some(kv) = iter.next() {
            let (k, v) = kv.map_err(|e| io("scanning the log", e))?;
            let index = index_of(&k);
            if last != 0 && index != last + 1 {
                return Err(LogError::Gap { file: name, after: last, next: index });
            }
            match record::decode(&v) {
                Ok((e, _)) if e.index() == index => {
                    (first, last, last_term) = (if first == 0 { index } else { first }, index, e.term());
                }
                Ok((e, _)) => {
                    let why = format!("key says index {index}, the record says {}", e.index());
                    return Err(LogError::Corrupt { file: name, index, why });
                }
                Err(why @ (RecordError::Short { .. } | RecordError::Checksum { .. })) if iter.peek().is_none() => {
                    let w = format!("{name}: the last log record (index {index}) is torn ({why}); dropping it");
                    warn!("{w}");
                    warnings.push(w);
                    db.remove(k).map_err(|e| io("dropping a torn record", e))?;
                    db.flush().map_err(|e| io("flushing the log", e))?;
                }
                Err(why) => return Err(LogError::Corrupt { file: name, index, why: why.to_string() }),
            }
        }
        if first == 0 {
            // Empty: the next entry follows the commit index (a snapshot covers the rest).
            (first, last) = (hard.commit + 1, hard.commit);
        }
        if hard.commit > last {
            let why = format!("the commit index {} lies beyond the last entry {last}", hard.commit);
            return Err(LogError::Corrupt { file: name, index: hard.commit, why });
        }
        let appended = Arc::new(AtomicU64::new(last));
        let syncer = Arc::new(SledSyncer { db: db.clone(), appended: appended.clone() });
        let log =
            SledLog { dir: dir.to_path_buf(), db, first, last, last_term, hard, appended, syncer, compactor: None };
        Ok(Opened { log, meta, warnings })
    }

    /// Writes the metadata of a new data directory, durably.
    ///
    /// # Errors
    /// The storage's failure.
    pub fn write_meta(&self, meta: &Meta) -> Result<(), LogError> {
        self.db.insert(META, sealed(&meta.encode())).map_err(|e| io("writing metadata", e))?;
        self.db.flush().map_err(|e| io("flushing metadata", e))?;
        Ok(())
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn hard_bytes(h: HardState) -> Vec<u8> {
        let mut b = Vec::with_capacity(24);
        for v in [h.term, h.vote, h.commit] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        sealed(&b)
    }
}

impl Log for SledLog {
    fn append(&mut self, entries: &[Entry], hard: HardState) -> Result<(), LogError> {
        let mut batch = sled::Batch::default();
        let mut buf = Vec::new();
        for e in entries {
            assert_eq!(e.index(), self.last + 1, "invariant: log appends are contiguous");
            buf.clear();
            record::encode(e, &mut buf);
            batch.insert(&key(e.index())[..], &buf[..]);
            self.last = e.index();
            self.last_term = e.term();
        }
        batch.insert(HARD, Self::hard_bytes(hard));
        self.db.apply_batch(batch).map_err(|e| io("appending to the log", e))?;
        self.hard = hard;
        self.appended.store(self.last, Ordering::Release);
        Ok(())
    }

    fn entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, LogError> {
        if from < self.first || to > self.last + 1 || from > to {
            return Err(LogError::Unavailable { index: from, first: self.first, last: self.last });
        }
        let name = self.dir.display().to_string();
        let mut out = Vec::with_capacity((to - from) as usize);
        for kv in self.db.range(key(from)..key(to)) {
            let (k, v) = kv.map_err(|e| io("reading the log", e))?;
            let index = index_of(&k);
            let (e, _) = record::decode(&v).map_err(|why| LogError::Corrupt {
                file: name.clone(),
                index,
                why: why.to_string(),
            })?;
            out.push(e);
        }
        if out.len() as u64 != to - from {
            return Err(LogError::Gap { file: name, after: from + out.len() as u64, next: to });
        }
        Ok(out)
    }

    fn truncate_from(&mut self, index: u64) -> Result<(), LogError> {
        self.await_compactor();
        let mut batch = sled::Batch::default();
        for i in index.max(self.first)..=self.last {
            batch.remove(&key(i)[..]);
        }
        self.db.apply_batch(batch).map_err(|e| io("truncating the log", e))?;
        self.last = self.last.min(index.saturating_sub(1)).max(self.first - 1);
        self.last_term = match self.entries(self.last, self.last + 1) {
            Ok(v) => v.first().map_or(self.last_term, Entry::term),
            Err(_) => self.last_term,
        };
        self.appended.store(self.last, Ordering::Release);
        Ok(())
    }

    fn compact_to(&mut self, index: u64) -> Result<(), LogError> {
        // The last entry always stays, so a reopened log knows where it ends.
        let upto = index.min(self.last);
        if upto <= self.first {
            return Ok(());
        }
        // The log ends below `upto` now; its records go on a thread, because this runs under
        // the engine's lock and removing a million of them took seconds (every request
        // waited). The thread removes them in ascending chunks, so what a crash leaves is a
        // contiguous log that starts later below the snapshot: one compacted less, which
        // recovery already reads. One compactor at a time keeps it so.
        self.await_compactor();
        let (from, db) = (self.first, self.db.clone());
        self.first = upto;
        let work = move || {
            let mut start = from;
            while start < upto {
                let end = (start + COMPACT_CHUNK).min(upto);
                let mut batch = sled::Batch::default();
                for i in start..end {
                    batch.remove(&key(i)[..]);
                }
                if let Err(e) = db.apply_batch(batch) {
                    warn!(error = %e, from = start, upto, "removing compacted log records failed; they stay below the snapshot");
                    return;
                }
                start = end;
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
        let mut batch = sled::Batch::default();
        for kv in self.db.scan_prefix(b"e") {
            let (k, _) = kv.map_err(|e| io("scanning the log", e))?;
            batch.remove(k);
        }
        let hard = HardState { commit: self.hard.commit.max(index), ..self.hard };
        batch.insert(HARD, Self::hard_bytes(hard));
        self.db.apply_batch(batch).map_err(|e| io("resetting the log to a snapshot", e))?;
        self.db.flush().map_err(|e| io("flushing the log", e))?;
        (self.first, self.last, self.last_term, self.hard) = (index + 1, index, term, hard);
        self.appended.store(index, Ordering::Release);
        Ok(())
    }

    fn span(&self) -> Span {
        Span { first: self.first, last: self.last, last_term: self.last_term, hard: self.hard }
    }

    fn persistent(&self) -> bool {
        true
    }

    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        Some(self.syncer.clone())
    }
}
