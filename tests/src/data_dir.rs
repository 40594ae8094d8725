//! A `testkeeper serve --data-dir` directory seen from outside, for the durability tests:
//! starting and killing the server on it, reading and damaging its sled log through sled's
//! own API (key layout of `server/src/log/sled.rs`, documented in docs/persistence.md), and
//! an exact picture of its contents to show that a refused start changed nothing.
//!
//! Damage goes through sled, not into sled's files: flipping bytes of sled's own segments
//! tests sled, while a bad value under a record's key is what our checksums must catch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::env::testkeeper_bin;
use crate::process::{run_bounded, BoundedOutput};

/// The key of the log record at `index`: `e` and the index big-endian, so keys sort by index.
pub fn entry_key(index: u64) -> Vec<u8> {
    let mut k = vec![b'e'];
    k.extend_from_slice(&index.to_be_bytes());
    k
}

/// The sled database of a data directory's log.
pub struct SledLog {
    db: sled::Db,
}

impl SledLog {
    /// Opens `DATA_DIR/log` (the server must not be running: sled locks the directory).
    pub fn open(data_dir: &Path) -> SledLog {
        let path = data_dir.join("log");
        let db = sled::open(&path).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
        SledLog { db }
    }

    /// The indexes of the log records held, in order.
    pub fn indexes(&self) -> Vec<u64> {
        self.db
            .scan_prefix(b"e")
            .keys()
            .map(|k| u64::from_be_bytes(k.expect("scan")[1..9].try_into().expect("9-byte key")))
            .collect()
    }

    /// The stored record at `index`.
    pub fn record(&self, index: u64) -> Vec<u8> {
        self.db.get(entry_key(index)).expect("get").unwrap_or_else(|| panic!("no record at {index}")).to_vec()
    }

    /// Replaces the record at `index` with `value`, durably.
    pub fn put(&self, index: u64, value: &[u8]) {
        self.db.insert(entry_key(index), value).expect("insert");
        self.db.flush().expect("flush");
    }

    /// Removes the record at `index`, durably.
    pub fn remove(&self, index: u64) {
        assert!(self.db.remove(entry_key(index)).expect("remove").is_some(), "no record at {index}");
        self.db.flush().expect("flush");
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
