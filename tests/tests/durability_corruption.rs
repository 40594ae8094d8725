//! Issue 12's recovery rules, from outside: a data directory written by a real `testkeeper
//! serve --data-dir`, damaged while the server is down, then served again.
//!
//! - A flipped byte in a snapshot, a record in the middle of the log that fails its checksum,
//!   is cut short or holds another index's record, a gap in the indexes, a log deleted under
//!   existing snapshots: `serve` refuses to start, exits non-zero, names the file and the
//!   index, and leaves the directory as it was (every path, every snapshot byte, every key and
//!   value of the log as sled reads them).
//! - A torn last record: dropped with a warning naming the file and the index, and the server
//!   starts without the write it held.
//!
//! The log is damaged through sled's API under a record's key (`e` + index, big-endian; see
//! docs/persistence.md), not by flipping bytes of sled's own files, which would test sled.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use testkeeper_tests::data_dir::{copy_dir, serve_expecting_exit, snapshot_files, Contents, SledLog};
use testkeeper_tests::net::poll_until;
use testkeeper_tests::TestkeeperProcess;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

/// A data directory and what was written into it.
struct Base {
    dir: tempfile::TempDir,
    /// Index of the last entry: the setData that turned /c/last from "v1" into "v2".
    last: u64,
    /// Index of the newest snapshot (below `last`).
    snapshot: u64,
}

fn lgif(tk: &TestkeeperProcess, key: &str) -> u64 {
    let text = tk.four_letter_word("lgif").expect("lgif");
    text.lines().find_map(|l| l.strip_prefix(&format!("{key}\t"))).expect(key).trim().parse().unwrap()
}

/// Takes a snapshot with `csnp` and waits until its file is written; returns its index.
fn snapshot_now(tk: &TestkeeperProcess) -> u64 {
    let index: u64 = tk.four_letter_word("csnp").expect("csnp").trim().parse().expect("csnp answers the index");
    let written = poll_until(Instant::now() + Duration::from_secs(30), Duration::from_millis(10), || {
        (lgif(tk, "last_snapshot_idx") == index).then_some(())
    });
    assert!(written.is_some(), "the snapshot at {index} was not written:\n{}", tk.log_tail(20));
    index
}

/// Writes about a hundred entries with two snapshots (taken by `csnp`) under the last of
/// them, then kills the server: every write was acknowledged, so durable.
fn base() -> Base {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    // No snapshot by distance: the two `csnp` snapshots are the only ones, at known indexes.
    let tk = TestkeeperProcess::start(&["--data-dir", &d, "--snapshot-distance", "100000", "--snapshots-to-keep", "2"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = rt.block_on(async {
        let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        let open = Acl::open();
        c.create("/c", b"", &open, create_mode::PERSISTENT).await.unwrap();
        c.create("/c/last", b"v1", &open, create_mode::PERSISTENT).await.unwrap();
        c
    });
    let create = |range: std::ops::Range<u32>| {
        rt.block_on(async {
            for i in range {
                let data = format!("node {i}");
                c.create(&format!("/c/n{i}"), data.as_bytes(), &Acl::open(), create_mode::PERSISTENT).await.unwrap();
            }
        })
    };
    create(0..30);
    snapshot_now(&tk);
    create(30..60);
    let snapshot = snapshot_now(&tk);
    create(60..100);
    rt.block_on(c.set_data("/c/last", b"v2", 0)).unwrap();
    let last = lgif(&tk, "last_log_idx");
    assert!(snapshot + 40 < last);
    drop(tk);
    let snaps = snapshot_files(dir.path());
    assert_eq!((snaps.len(), snaps.last().map(|s| s.0)), (2, Some(snapshot)));
    Base { dir, last, snapshot }
}

/// A copy of the base directory to damage.
fn copy_of(base: &Base, name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_dir(base.dir.path(), &dir);
    (tmp, dir)
}

/// `serve` on `dir` must exit non-zero with every one of `needles` in its message, and leave
/// the directory as it found it.
fn refuses(dir: &Path, needles: &[String]) {
    let before = Contents::of(dir);
    let out = serve_expecting_exit(dir, &[], Duration::from_secs(60));
    assert!(!out.timed_out(), "serve started on a damaged directory {}:\n{}", dir.display(), out.combined());
    assert!(!out.success(), "serve exited 0 on {}:\n{}", dir.display(), out.combined());
    assert!(out.stderr.contains("refusing to start: the data directory"), "{}", out.stderr);
    for n in needles {
        assert!(out.stderr.contains(n.as_str()), "expected {n:?} in:\n{}", out.stderr);
    }
    assert!(before == Contents::of(dir), "the refused start changed {}", dir.display());
    eprintln!("refused as it should: {}", out.stderr.lines().last().unwrap_or(""));
}

#[test]
fn damage_refuses_to_start_naming_the_file_and_index_and_changes_nothing() {
    let base = base();
    let log_name = |dir: &Path| dir.join("log").display().to_string();

    // A flipped byte in the newest snapshot file.
    let (_t, dir) = copy_of(&base, "snapshot-flip");
    let (index, file) = snapshot_files(&dir).pop().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&file, bytes).unwrap();
    refuses(&dir, &[file.display().to_string(), format!("snapshot at index {index}")]);

    // Records in the middle of the log: a flipped byte, cut short, another index's record.
    let (_t, dir) = copy_of(&base, "log-flip");
    let mid = {
        let log = SledLog::open(&dir);
        let indexes = log.indexes();
        assert_eq!(indexes.last(), Some(&base.last));
        let mid = indexes[indexes.len() / 2];
        let mut v = log.record(mid);
        let at = v.len() / 2;
        v[at] ^= 0x40;
        log.put(mid, &v);
        mid
    };
    refuses(&dir, &[format!("{}: log record at index {mid} is corrupt: checksum mismatch", log_name(&dir))]);

    let (_t, dir) = copy_of(&base, "log-cut");
    {
        let log = SledLog::open(&dir);
        let v = log.record(mid);
        log.put(mid, &v[..v.len() - 3]);
    }
    refuses(&dir, &[format!("{}: log record at index {mid} is corrupt: record cut short", log_name(&dir))]);

    let (_t, dir) = copy_of(&base, "log-swapped");
    {
        let log = SledLog::open(&dir);
        let next = log.record(mid + 1);
        log.put(mid, &next);
    }
    refuses(
        &dir,
        &[format!(
            "{}: log record at index {mid} is corrupt: key says index {mid}, the record says {}",
            log_name(&dir),
            mid + 1
        )],
    );

    // A torn last record (which a start that succeeds drops) and a snapshot whose name says
    // another index, found only after the log is open: the start is refused and the torn
    // record is still there, as is everything else (opening the log writes nothing before
    // the whole recovery has verified).
    let (_t, dir) = copy_of(&base, "torn-and-renamed");
    {
        let log = SledLog::open(&dir);
        let v = log.record(base.last);
        log.put(base.last, &v[..v.len() / 2]);
    }
    let (index, file) = snapshot_files(&dir).pop().unwrap();
    let name = file.file_name().unwrap().to_str().unwrap().replace(&index.to_string(), &(index + 1).to_string());
    let renamed = file.with_file_name(name);
    std::fs::rename(&file, &renamed).unwrap();
    refuses(
        &dir,
        &[renamed.display().to_string(), format!("the file name says index {}, the snapshot holds {index}", index + 1)],
    );

    // A gap: a record in the middle removed.
    let (_t, dir) = copy_of(&base, "log-gap");
    SledLog::open(&dir).remove(mid);
    refuses(
        &dir,
        &[format!("{}: log indexes are not contiguous: index {} is followed by {}", log_name(&dir), mid - 1, mid + 1)],
    );

    // The whole log deleted while snapshots exist.
    let (_t, dir) = copy_of(&base, "log-deleted");
    std::fs::remove_dir_all(dir.join("log")).unwrap();
    let newest = snapshot_files(&dir).pop().unwrap().1;
    refuses(
        &dir,
        &[format!(
            "{}: the log holds no metadata, but {} (index {}) exists",
            log_name(&dir),
            newest.display(),
            base.snapshot
        )],
    );
}

#[test]
fn a_torn_last_record_is_dropped_with_a_warning_and_the_server_starts() {
    let base = base();
    let (_t, dir) = copy_of(&base, "torn");
    {
        let log = SledLog::open(&dir);
        let v = log.record(base.last);
        log.put(base.last, &v[..v.len() / 2]);
    }
    let d = dir.display().to_string();
    let tk = TestkeeperProcess::start(&["--data-dir", &d]);
    let warning =
        format!("{}: the last log record (index {}) is torn (record cut short", dir.join("log").display(), base.last);
    assert!(tk.log_tail(40).contains(&warning), "expected {warning:?} in:\n{}", tk.log_tail(40));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        let (data, stat) = c.get_data("/c/last", false).await.unwrap();
        assert_eq!((data.as_slice(), stat.version), (&b"v1"[..], 0), "the torn setData is gone");
        let (data, _) = c.get_data("/c/n99", false).await.unwrap();
        assert_eq!(data, b"node 99", "everything before it is there");
        c.set_data("/c/last", b"v3", 0).await.unwrap();
    });
    // The log goes on from the dropped record's index: the new session's entry takes it, the
    // setData the next one.
    assert_eq!(lgif(&tk, "last_log_idx"), base.last + 1);
    drop(tk);
    let indexes = SledLog::open(&dir).indexes();
    assert_eq!(indexes.last(), Some(&(base.last + 1)));
    assert!(indexes.windows(2).all(|w| w[1] == w[0] + 1), "contiguous: {indexes:?}");
}
