//! `serve --import` of a real ZooKeeper data directory: a Debian ZooKeeper 3.8 made it in this
//! test (with `snapCount` low, so it rolls snapshots and logs while the workload runs: the
//! import reads a snapshot full of nodes and the txns after it). The imported server must
//! answer every client read as the live ZooKeeper did: `testkeeper digest --target` on both
//! gives the same Keeper digest (which covers every stat field, zxids and times included) and
//! the same content digest.

use std::path::{Path, PathBuf};
use std::process::Command;

use testkeeper_tests::env::{external_prereq, zookeeper_installed};
use testkeeper_tests::zookeeper::ZooKeeperConfig;
use testkeeper_tests::{testkeeper_bin, TestkeeperProcess, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{CheckVersionRequest, DeleteRequest, SetDataRequest};
use testkeeper_wire::{Acl, CreateOp, MultiResult, OpCode, Request};

fn create(path: &str, data: &[u8]) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: Acl::open(), flags: 0 };
    Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
}

/// What `testkeeper digest --target` says about a server: (nodes, keeper digest, content digest).
fn digests(addr: &str) -> (String, String, String) {
    let out = Command::new(testkeeper_bin()).args(["digest", "--target", addr, "--json"]).output().expect("digest");
    assert!(out.status.success(), "digest --target {addr}: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    assert_eq!(s("unreadable"), "0", "every node readable");
    (s("nodes"), s("keeper_digest"), s("content_digest"))
}

/// A workload that leaves every kind of node and change in the logs.
async fn workload(c: &Client) {
    let open = Acl::open();
    c.create("/app", b"a", &open, 0).await.unwrap();
    c.create("/app/config", b"v0", &open, 0).await.unwrap();
    for i in 1..=4 {
        c.set_data("/app/config", format!("v{i}").as_bytes(), -1).await.unwrap();
    }
    c.create("/app/q", b"", &open, 0).await.unwrap();
    let mut seqs = Vec::new();
    for _ in 0..5 {
        seqs.push(c.create("/app/q/item-", b"x", &open, create_mode::PERSISTENT_SEQUENTIAL).await.unwrap());
    }
    c.delete(&seqs[1], -1).await.unwrap();
    c.delete(&seqs[3], -1).await.unwrap();
    c.create("/app/q/item-", b"after deletes", &open, create_mode::PERSISTENT_SEQUENTIAL).await.unwrap();
    c.create("/app/lock", b"held", &open, create_mode::EPHEMERAL).await.unwrap();
    c.create("/app/ro", b"r", &open, 0).await.unwrap();
    c.set_acl("/app/ro", &[Acl::new(1 | 2, "world", "anyone")], -1).await.unwrap();
    c.create_container("/app/jobs", b"", &open).await.unwrap();
    c.create("/app/jobs/j1", b"", &open, 0).await.unwrap();
    c.create_ttl("/app/lease", b"l", &open, create_mode::PERSISTENT_WITH_TTL, 3_600_000).await.unwrap();
    c.multi(vec![
        create("/m1", b"m"),
        Request::SetData(SetDataRequest { path: "/app".into(), data: Some(b"b".to_vec()), version: -1 }),
        Request::Delete(DeleteRequest { path: seqs[0].clone(), version: -1 }),
    ])
    .await
    .unwrap();
    // A failed multi: logged as error txns, changing nothing.
    let check = Request::Check(CheckVersionRequest { path: "/app".into(), version: 99 });
    let failed = c.multi(vec![create("/m2", b""), check]).await;
    assert!(failed.is_err() || failed.is_ok_and(|r| r.iter().any(|x| matches!(x, MultiResult::Error(e) if *e != 0))));
    c.create("/bulk", b"", &open, 0).await.unwrap();
    for i in 0..60 {
        c.create(&format!("/bulk/n{i:02}"), format!("{i}").as_bytes(), &open, 0).await.unwrap();
        if i % 3 == 0 {
            c.set_data(&format!("/bulk/n{i:02}"), b"changed", -1).await.unwrap();
        }
    }
    for i in (0..60).step_by(7) {
        c.delete(&format!("/bulk/n{i:02}"), -1).await.unwrap();
    }
}

/// Writes the repository's fixture (`tests/fixtures/zookeeper/`): the directory with each log
/// cut after its last record (ZooKeeper preallocates 64 MiB of zeros), and the digests the
/// live server reported, which `server/tests/interop_zookeeper.rs` checks the import against.
fn write_fixture(src: &Path, out: &Path, live: &(String, String, String)) {
    let dst = out.join("version-2");
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let bytes = std::fs::read(e.path()).unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let keep = if name.starts_with("log.") { log_end(&bytes) } else { bytes.len() };
        std::fs::write(dst.join(&name), &bytes[..keep]).unwrap();
    }
    let (nodes, keeper, content) = live;
    let json = format!("{{\"nodes\":\"{nodes}\",\"keeper_digest\":\"{keeper}\",\"content_digest\":\"{content}\"}}\n");
    std::fs::write(out.join("live-digests.json"), json).unwrap();
}

/// The end of a txn log's last record: records are an i64 checksum, an i32 length, the txn and
/// one byte, after a 16-byte header; a zero length is the preallocated rest.
fn log_end(b: &[u8]) -> usize {
    let mut at = 16;
    while at + 12 <= b.len() {
        let len = i32::from_be_bytes(b[at + 8..at + 12].try_into().unwrap());
        if len <= 0 || at + 12 + len as usize + 1 > b.len() {
            break;
        }
        at += 12 + len as usize + 1;
    }
    at
}

/// A copy of a `version-2` directory, as `<tmp>/version-2`.
fn copy_of(src: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    let dst = copy.path().join("version-2");
    std::fs::create_dir(&dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    copy
}

/// `testkeeper snapshot convert DIR --flavor zookeeper --out FILE`.
fn convert(dir: &Path, out: &Path) -> std::process::Output {
    (Command::new(testkeeper_bin()).args(["snapshot", "convert", dir.to_str().unwrap(), "--flavor", "zookeeper"]))
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// The zxid in the newest `snapshot.<hex>` name.
fn newest_snapshot_zxid(dir: &Path) -> i64 {
    (std::fs::read_dir(dir).unwrap().flatten())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            i64::from_str_radix(name.strip_prefix("snapshot.")?, 16).ok()
        })
        .max()
        .unwrap_or(0)
}

fn version_2(root: &Path) -> PathBuf {
    for e in walkdir(root) {
        if e.ends_with("version-2") {
            return e;
        }
    }
    panic!("no version-2 under {}", root.display());
}

fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push(p.clone());
            out.extend(walkdir(&p));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_zookeeper_data_dir_imports_with_the_live_servers_digests() {
    if !external_prereq("Debian ZooKeeper", zookeeper_installed()) {
        return;
    }
    let zk = ZooKeeperProcess::start_with(ZooKeeperConfig::default().cfg("snapCount", "20"));
    let client = Client::connect(zk.addr(), ConnectOptions::default()).await.unwrap();
    workload(&client).await;
    // Writes the newest snapshot does not hold, so the import must replay them from the log:
    // ZooKeeper logs at least snapCount/2 txns between snapshots, so three writes right after
    // one land in the log only.
    let src = version_2(zk.dir());
    let mut replayed = false;
    for round in 0..10 {
        let mut last = 0;
        for k in 0..3 {
            last = client.set_data("/app/config", format!("tail {round}.{k}").as_bytes(), -1).await.unwrap().mzxid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        if newest_snapshot_zxid(&src) < last {
            replayed = true;
            break;
        }
    }
    assert!(replayed, "every write landed in a snapshot: nothing left to replay from the log");
    let live = digests(&zk.connect_string());
    // Copied while the workload's session (and so its ephemeral) is still open.
    let copy = copy_of(&src);
    let snapshots = (std::fs::read_dir(copy.path().join("version-2")).unwrap().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("snapshot."))
        .count();
    assert!(snapshots >= 2, "ZooKeeper rolled no snapshot past its first: the test reads no full one");

    if let Some(out) = std::env::var_os("TESTKEEPER_ZK_FIXTURE_OUT") {
        write_fixture(&copy.path().join("version-2"), Path::new(&out), &live);
    }
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper", "--import", copy.path().to_str().unwrap()]);
    let imported = digests(&tk.addr().to_string());
    eprintln!("live {live:?}, imported {imported:?}, {snapshots} snapshots");
    assert_eq!(imported, live, "(nodes, keeper digest, content digest): imported vs live ZooKeeper");

    // The same directory through a Keeper snapshot file, as keeper-converter would make one.
    // Keeper's V6 has no TTL field: the conversion is refused, naming the node.
    let out = convert(copy.path(), &copy.path().join("refused.bin.zstd"));
    assert!(!out.status.success(), "converted a TTL node into V6");
    assert!(String::from_utf8_lossy(&out.stderr).contains("/app/lease is a TTL node"), "{out:?}");
    client.delete("/app/lease", -1).await.unwrap();
    let live = digests(&zk.connect_string());
    let copy = copy_of(&src);
    let keeper_file = copy.path().join("converted.bin.zstd");
    let out = convert(copy.path(), &keeper_file);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "convert: {said}{}", String::from_utf8_lossy(&out.stderr));
    let tk2 = TestkeeperProcess::start(&["--flavor", "zookeeper", "--import", keeper_file.to_str().unwrap()]);
    assert_eq!(digests(&tk2.addr().to_string()), live, "through a Keeper snapshot file");
    drop(client);
}

/// The data directory a ZooKeeper 3.8 made for this file's first test, shipped in
/// `tests/fixtures/zookeeper/` with the digests the live server reported
/// (`TESTKEEPER_ZK_FIXTURE_OUT=tests/fixtures/zookeeper cargo test -p testkeeper-tests --test
/// import_zookeeper` writes it anew): imported without a JVM, it still answers as that server did.
#[test]
fn the_shipped_zookeeper_fixture_imports_with_the_digests_it_was_recorded_with() {
    let fixture = testkeeper_tests::env::repo_root().join("tests/fixtures/zookeeper");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture.join("live-digests.json")).unwrap()).unwrap();
    let s = |k: &str| recorded[k].as_str().unwrap().to_string();
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper", "--import", fixture.to_str().unwrap()]);
    assert_eq!(digests(&tk.addr().to_string()), (s("nodes"), s("keeper_digest"), s("content_digest")));
}
