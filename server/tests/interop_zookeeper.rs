//! ZooKeeper data directories made hostile: the shipped fixture (`tests/fixtures/zookeeper/`,
//! written by a real ZooKeeper 3.8, see `tests/tests/import_zookeeper.rs`) cut and flipped at
//! every byte, and txn logs whose records carry valid checksums around txns no ZooKeeper would
//! log. Each import ends in a tree or an error naming the file; none crashes the process.

use std::path::{Path, PathBuf};

use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::core::state::StateOptions;
use testkeeper_server::engine::Engine;
use testkeeper_server::interop::{self, ImportError};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/zookeeper/version-2")
}

fn opts() -> StateOptions {
    Engine::fresh_options(&ServerConfig::new(Flavor::Zookeeper), 0)
}

/// A copy of the fixture with `name` replaced by `bytes`.
fn with_file(name: &str, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("version-2");
    std::fs::create_dir(&dst).unwrap();
    for e in std::fs::read_dir(fixture()).unwrap().flatten() {
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    std::fs::write(dst.join(name), bytes).unwrap();
    dir
}

fn newest(prefix: &str) -> String {
    let mut names: Vec<(u64, String)> = (std::fs::read_dir(fixture()).unwrap().flatten())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            Some((u64::from_str_radix(n.strip_prefix(prefix)?, 16).ok()?, n))
        })
        .collect();
    names.sort();
    names.pop().unwrap().1
}

#[test]
fn the_fixture_imports_and_replays_its_logs() {
    let imported = interop::import(&fixture(), &opts()).unwrap();
    assert!(imported.txns_applied > 0, "the newest snapshot is followed by txns: {imported:?}");
    assert!(imported.state.tree().get("/app/lock").is_some_and(|n| n.owner() != 0), "the ephemeral");
    assert!(imported.state.tree().get("/app/jobs").is_some());
    assert!(imported.state.tree().ttl_of("/app/lease") > 0, "the TTL node keeps its TTL");
}

#[test]
fn every_cut_and_flip_of_the_newest_snapshot_and_log_is_refused_or_read_never_a_panic() {
    for name in [newest("snapshot."), newest("log.")] {
        let good = std::fs::read(fixture().join(&name)).unwrap();
        let mut refused = 0;
        for i in (0..good.len()).step_by(3) {
            let mut flipped = good.clone();
            flipped[i] ^= 0x5a;
            for bytes in [&good[..i], flipped.as_slice()] {
                let dir = with_file(&name, bytes);
                match interop::import(dir.path(), &opts()) {
                    Ok(_) => {}
                    Err(e @ (ImportError::Format { .. } | ImportError::Content { .. })) => {
                        assert!(e.to_string().contains("version-2"), "{e}");
                        refused += 1;
                    }
                    Err(e) => panic!("{name} byte {i}: {e}"),
                }
            }
        }
        assert!(refused > good.len() / 3, "{name}: damage goes unnoticed ({refused} refused)");
    }
}

/// A txn log of the given txns, each record with a valid Adler-32.
fn log(txns: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0x5A4B_4C47_i32.to_be_bytes());
    out.extend_from_slice(&2_i32.to_be_bytes());
    out.extend_from_slice(&0_i64.to_be_bytes());
    for t in txns {
        let mut a = adler2::Adler32::new();
        a.write_slice(t);
        out.extend_from_slice(&i64::from(a.checksum()).to_be_bytes());
        out.extend_from_slice(&(t.len() as i32).to_be_bytes());
        out.extend_from_slice(t);
        out.push(b'B');
    }
    out
}

fn txn(zxid: i64, ty: i32, body: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&0x42_i64.to_be_bytes());
    t.extend_from_slice(&1_i32.to_be_bytes());
    t.extend_from_slice(&zxid.to_be_bytes());
    t.extend_from_slice(&1_700_000_000_000_i64.to_be_bytes());
    t.extend_from_slice(&ty.to_be_bytes());
    t.extend_from_slice(body);
    t
}

fn jstr(s: &str) -> Vec<u8> {
    let mut b = (s.len() as i32).to_be_bytes().to_vec();
    b.extend_from_slice(s.as_bytes());
    b
}

#[test]
fn txns_no_zookeeper_would_log_are_skipped_or_refused_never_a_panic() {
    let after = i64::from_str_radix(newest("snapshot.").trim_start_matches("snapshot."), 16).unwrap() + 1000;
    let create = |path: &str| {
        let mut b = jstr(path);
        b.extend_from_slice(&(-1_i32).to_be_bytes()); // null data
        b.extend_from_slice(&0_i32.to_be_bytes()); // no ACL
        b.push(0);
        b.extend_from_slice(&0_i32.to_be_bytes());
        b
    };
    let hostile = [
        txn(after, 1, &create("/")),
        txn(after + 1, 1, &create("/no/parent")),
        txn(after + 2, 1, &create("/bad//path")),
        txn(after + 3, 2, &jstr("/")),
        txn(after + 4, 2, &jstr("/app")),
        txn(after + 5, 5, &[jstr("/app"), (-1_i32).to_be_bytes().to_vec(), 999_i32.to_be_bytes().to_vec()].concat()),
        txn(after + 6, 14, &(-5_i32).to_be_bytes()),
        txn(after + 7, 77, b""),
    ];
    for (i, t) in hostile.iter().enumerate() {
        let dir = with_file("log.ffffff", &log(std::slice::from_ref(t)));
        match interop::import(dir.path(), &opts()) {
            Ok(imported) => assert!(imported.txns_skipped > 0 || i == 6, "txn {i} applied: {imported:?}"),
            Err(e) => assert!(e.to_string().contains("log.ffffff"), "txn {i}: {e}"),
        }
    }
    // A log whose zxids go backwards is refused.
    let dir = with_file("log.ffffff", &log(&[txn(after + 10, 2, &jstr("/m1")), txn(after + 9, 2, &jstr("/bulk/n01"))]));
    let e = interop::import(dir.path(), &opts()).unwrap_err();
    assert!(e.to_string().contains("goes backwards"), "{e}");
}
