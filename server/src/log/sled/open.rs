//! Opening the sled log: sled's leftover files removed first (sled issue #1527), then every
//! record verified without writing; the one repair (dropping a torn last record) waits until
//! the whole recovery has verified (`Log::finish_open`), so a refused start leaves the
//! directory as it was.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tracing::warn;

use super::store::{Released, Store};
use super::values::{decode_hard, index_of, io, unseal, Meta, HARD, META};
use super::SledLog;
use crate::log::{chunk, HardState, LogError};

/// A log as found on disk, with what was repaired.
pub struct Opened {
    pub log: SledLog,
    /// The metadata, `None` for a database that never had any (new, or emptied).
    pub meta: Option<Meta>,
    /// Warnings to log: a torn last record that will be dropped (`Log::finish_open`).
    pub warnings: Vec<String>,
}

/// Removes sled's own unfinished page-table snapshots, `snap.<lsn>.generating`, before sled
/// opens the directory. sled writes its snapshot to that name and renames it when complete, so
/// one left behind is always an interrupted write (a crash, a full disk); but sled 0.34 then
/// trips over it at every later open ("empty/corrupt snapshot file found", then "Read
/// corrupted data at file offset None"; sled issues #1527 and #1509), so a supervisor that
/// restarts the server after a full disk bricked it. Our records are in sled's log, not in
/// these files, and sled rebuilds its page table from the log without them.
fn remove_unfinished_sled_snapshots(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            let path = e.path();
            match std::fs::remove_file(&path) {
                Ok(()) => warn!(file = %path.display(), "removed sled's unfinished snapshot (sled issue #1527)"),
                Err(err) => warn!(file = %path.display(), error = %err, "cannot remove sled's unfinished snapshot"),
            }
        }
    }
}

impl SledLog {
    /// Opens (or creates) the database in `dir` and verifies it. With `write_behind`, appends
    /// are staged until the syncer's next `sync` (`--fsync always`); without, each append
    /// writes its batch at once.
    ///
    /// # Errors
    /// The database cannot be opened, or it does not verify: a record other than the last
    /// fails its checksum, indexes are not contiguous, the metadata or hard state is corrupt,
    /// or the commit index lies beyond the log. Nothing is changed on disk then.
    pub fn open(dir: &Path, write_behind: bool) -> Result<Opened, LogError> {
        let name = dir.display().to_string();
        remove_unfinished_sled_snapshots(dir);
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
            Some(v) => decode_hard(&v).ok_or_else(|| LogError::Corrupt {
                file: name.clone(),
                index: 0,
                why: "the hard state fails its checksum".into(),
            })?,
        };
        let mut warnings = Vec::new();
        let mut torn = None;
        let (mut first, mut last, mut last_term) = (0, 0, 0);
        let mut iter = db.scan_prefix(b"e").peekable();
        let mut entries = Vec::new();
        while let Some(kv) = iter.next() {
            let (k, v) = kv.map_err(|e| io("scanning the log", e))?;
            let index = index_of(&k);
            if last != 0 && index != last + 1 {
                return Err(LogError::Gap { file: name, after: last, next: index });
            }
            if v.is_empty() {
                return Err(LogError::Corrupt { file: name, index, why: "its chunk is empty".into() });
            }
            entries.clear();
            let walked = chunk::decode(index, &v, 0, u64::MAX, &mut entries);
            if let Some(e) = entries.last() {
                (first, last, last_term) = (if first == 0 { index } else { first }, e.index(), e.term());
            }
            let Err(bad) = walked else { continue };
            if iter.peek().is_none() && bad.torn_at_end(&v) {
                let w = format!("{name}: the last log record (index {}) is torn ({}); dropping it", bad.index, bad.why);
                warn!("{w}");
                warnings.push(w);
                // Not yet: only once the whole recovery has verified (`finish_open`).
                torn = Some((k, bad.offset));
                break;
            }
            let why = match bad.why {
                chunk::ChunkError::Misplaced { claims } => {
                    format!("key says index {}, the record says {claims}", bad.index)
                }
                chunk::ChunkError::Record(r) => r.to_string(),
            };
            return Err(LogError::Corrupt { file: name, index: bad.index, why });
        }
        if first == 0 {
            // Empty: the next entry follows the commit index (a snapshot covers the rest).
            (first, last) = (hard.commit + 1, hard.commit);
        }
        if hard.commit > last {
            let why = format!("the commit index {} lies beyond the last entry {last}", hard.commit);
            return Err(LogError::Corrupt { file: name, index: hard.commit, why });
        }
        let released = Released { lock_file: dir.join("db") };
        let store = Arc::new(Store {
            db,
            staged: Mutex::default(),
            writing: Mutex::default(),
            appended: AtomicU64::new(last),
            _released: released,
        });
        let log = SledLog {
            dir: dir.to_path_buf(),
            first,
            last,
            last_term,
            hard,
            store,
            write_behind,
            compactor: None,
            torn,
        };
        Ok(Opened { log, meta, warnings })
    }

    /// Cuts the torn last record `open` found, now that recovery has verified everything.
    pub(super) fn drop_torn(&mut self) -> Result<(), LogError> {
        let Some((k, kept)) = self.torn.take() else { return Ok(()) };
        let db = &self.store.db;
        let v = db.get(&k).map_err(|e| io("reading a torn record", e))?.unwrap_or_default();
        if kept == 0 {
            db.remove(&k).map_err(|e| io("dropping a torn record", e))?;
        } else {
            db.insert(&k, &v[..kept.min(v.len())]).map_err(|e| io("dropping a torn record", e))?;
        }
        db.flush().map_err(|e| io("flushing the log", e))?;
        Ok(())
    }
}
