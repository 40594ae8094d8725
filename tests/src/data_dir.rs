//! A `testkeeper serve --data-dir` directory seen from outside, for the durability tests:
//! starting and killing the server on it, reading and damaging its sled log through sled's
//! own API (the chunk layout of `server/src/log/sled/`, documented in docs/persistence.md), and
//! an exact picture of its contents to show that a refused start changed nothing.
//!
//! Damage goes through sled, not into sled's files: flipping bytes of sled's own segments
//! tests sled, while a bad value under a record's key is what our checksums must catch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::env::testkeeper_bin;
use crate::process::{run_bounded, BoundedOutput};

/// The key of the chunk whose first record is `index`: `e` and the index big-endian, so keys
/// sort by index.
pub fn entry_key(index: u64) -> Vec<u8> {
    let mut k = vec![b'e'];
    k.extend_from_slice(&index.to_be_bytes());
    k
}

/// The records of a chunk, back to back, split by their headers (the 4-byte payload length at
/// offset 21 of a 25-byte header); a piece that does not fit is the last one.
fn split_records(chunk: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < chunk.len() {
        let len = chunk.get(at + 21..at + 25).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize);
        let end = len.map_or(chunk.len(), |n| (at + 25 + n).min(chunk.len()));
        out.push(chunk[at..end].to_vec());
        at = end;
    }
    out
}

/// The sled database of a data directory's log, seen record by record: the server stores runs
/// of records (chunks) under the key of their first index; damage to one record is written by
/// splitting its chunk so the record has a key of its own, a layout the server itself may write.
pub struct SledLog {
    db: sled::Db,
}

impl SledLog {
    /// Opens `DATA_DIR/log` (the server must not be running: sled locks the directory).
    pub fn open(data_dir: &Path) -> SledLog {
        let path = data_dir.join("log");
        // A `SledLog` dropped just before can still hold the lock for a moment (seen on a
        // loaded CI machine as "could not acquire lock" right after the previous handle's
        // drop). sled reports it only in the message (an `ErrorKind::Other` error).
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            match sled::open(&path) {
                Ok(db) => return SledLog { db },
                Err(e) if e.to_string().contains("could not acquire lock") && Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("opening {}: {e}", path.display()),
            }
        }
    }

    /// Every record held, by index, as stored.
    fn records(&self) -> BTreeMap<u64, Vec<u8>> {
        let mut out = BTreeMap::new();
        for kv in self.db.scan_prefix(b"e") {
            let (k, v) = kv.expect("scan");
            let first = u64::from_be_bytes(k[1..9].try_into().expect("9-byte key"));
            for (i, r) in split_records(&v).into_iter().enumerate() {
                out.insert(first + i as u64, r);
            }
        }
        out
    }

    /// The indexes of the log records held, in order.
    pub fn indexes(&self) -> Vec<u64> {
        self.records().into_keys().collect()
    }

    /// The stored record at `index`.
    pub fn record(&self, index: u64) -> Vec<u8> {
        self.records().remove(&index).unwrap_or_else(|| panic!("no record at {index}"))
    }

    /// Rewrites the chunk that holds `index` as three: the records before it, `value` (or
    /// nothing) under `index`'s own key, and the records after it; durably.
    fn split_at(&self, index: u64, value: Option<&[u8]>) {
        let (k, v) = self.db.range(..=entry_key(index)).next_back().expect("range").expect("a chunk holds it");
        let first = u64::from_be_bytes(k[1..9].try_into().expect("9-byte key"));
        let records = split_records(&v);
        assert!(index < first + records.len() as u64, "no record at {index}");
        let at = (index - first) as usize;
        let mut batch = sled::Batch::default();
        batch.remove(k);
        if at > 0 {
            batch.insert(entry_key(first), records[..at].concat());
        }
        if let Some(value) = value {
            batch.insert(entry_key(index), value);
        }
        if at + 1 < records.len() {
            batch.insert(entry_key(index + 1), records[at + 1..].concat());
        }
        self.db.apply_batch(batch).expect("apply_batch");
        self.db.flush().expect("flush");
    }

    /// Replaces the record at `index` with `value`, durably.
    pub fn put(&self, index: u64, value: &[u8]) {
        self.split_at(index, Some(value));
    }

    /// Removes the record at `index`, durably.
    pub fn remove(&self, index: u64) {
        self.split_at(index, None);
    }

    /// Every key and value of the database (records, hard state, metadata).
    pub fn contents(&self) -> BTreeMap<Vec<u8>, Vec<u8>> {
        self.db.iter().map(|kv| kv.expect("iter")).map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
    }
}

/// What a refused start must leave as it was: every path under the data directory, the bytes
/// of every file outside `log/` (the snapshots), and the log's keys and values as sled reads
/// them. sled's own files under `log/` are not compared byte for byte: sled rewrites its
/// page-table snapshot whenever it opens a database (docs/persistence.md).
#[derive(Debug, PartialEq, Eq)]
pub struct Contents {
    pub paths: BTreeSet<PathBuf>,
    pub files: BTreeMap<PathBuf, Vec<u8>>,
    pub log: Option<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl Contents {
    /// Reads `data_dir` (opening its log with sled when there is one).
    pub fn of(data_dir: &Path) -> Contents {
        let mut paths = BTreeSet::new();
        let mut files = BTreeMap::new();
        walk(data_dir, data_dir, &mut paths, &mut files);
        let log = data_dir.join("log").exists().then(|| SledLog::open(data_dir).contents());
        // `log` itself counts (a refused start must not create it); what sled keeps inside does not.
        let paths = paths.into_iter().filter(|p| !(p.starts_with("log") && p.components().count() > 1)).collect();
        Contents { paths, files, log }
    }
}

fn walk(root: &Path, dir: &Path, paths: &mut BTreeSet<PathBuf>, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read_dir").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for p in entries {
        let rel = p.strip_prefix(root).expect("under root").to_path_buf();
        paths.insert(rel.clone());
        if p.is_dir() {
            walk(root, &p, paths, files);
        } else if !rel.starts_with("log") {
            files.insert(rel, std::fs::read(&p).expect("read"));
        }
    }
}

/// Copies a directory tree (a data directory the server is not running on).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// Runs `testkeeper serve --listen 127.0.0.1:0 --data-dir DIR <args>` expecting it to exit on
/// its own (a refused start); killed after `timeout` otherwise.
pub fn serve_expecting_exit(data_dir: &Path, args: &[&str], timeout: Duration) -> BoundedOutput {
    let mut cmd = Command::new(testkeeper_bin());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(data_dir).args(args);
    run_bounded(&mut cmd, b"", timeout).expect("running testkeeper serve")
}

/// The snapshot files of a data directory, oldest first, with their indexes.
pub fn snapshot_files(data_dir: &Path) -> Vec<(u64, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(data_dir.join("snapshots")) else { return Vec::new() };
    let mut out: Vec<(u64, PathBuf)> = rd
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_str()?.to_string();
            let index = name.strip_prefix("snapshot_")?.strip_suffix(".bin.zst")?.parse().ok()?;
            Some((index, p))
        })
        .collect();
    out.sort();
    out
}
