//! Keeper snapshot files in and out, through the library: the fixtures in
//! `tests/fixtures/keeper/` were written from the format description by
//! `scripts/keeper-snapshot-fixtures.py`, not by testkeeper, so the reader is checked against
//! bytes it did not produce; then an export of what was read imports back to the same tree.

use std::path::{Path, PathBuf};

use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::core::state::StateOptions;
use testkeeper_server::engine::Engine;
use testkeeper_server::interop::{self, keeper, ImportError};

const SESSION: i64 = 0x1_0000_0001;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/keeper")
}

fn opts() -> StateOptions {
    Engine::fresh_options(&ServerConfig::new(Flavor::Keeper), 0)
}

#[test]
fn the_v5_and_v6_fixtures_import_with_their_stored_digest() {
    let mut digests = Vec::new();
    for (file, index) in [("snapshot_41.bin.zstd", 41), ("snapshot_42.bin.zstd", 42)] {
        let imported = interop::import(&fixtures().join(file), &opts()).unwrap();
        assert_eq!(imported.digest_matches(), Some(true), "{file}: stored {:?}", imported.stored_digest);
        let s = &imported.state;
        // 12 nodes in the file, plus Keeper's two system nodes with data.
        assert_eq!(s.tree().len(), 14, "{file}: {:?}", s.tree().paths());
        assert_eq!((s.last_index(), s.last_term(), s.zxid()), (index, 3, 12), "{file}");
        let replicas = s.tree().get("/clickhouse/replicas").unwrap();
        assert_eq!(replicas.data(), b"\x00\x01binary\xff");
        assert_eq!((replicas.stat.version, replicas.stat.mzxid), (3, 10));
        let secret = s.tree().get("/clickhouse/secret").unwrap();
        assert_eq!(secret.acl().len(), 2);
        assert_eq!(secret.acl()[0].id.scheme, "digest");
        assert_eq!(s.tree().get("/clickhouse/leader").unwrap().owner(), SESSION);
        assert_eq!(s.tree().get("/clickhouse/task_queue").unwrap().seq(), 3);
        assert_eq!(s.sessions().get(&SESSION).map(|i| i.timeout_ms), Some(30_000));
        assert!(s.next_session_id() > SESSION);
        digests.push(s.tree().digest());
    }
    assert_eq!(digests[0], digests[1], "V5 and V6 hold the same tree");
}

#[test]
fn a_directory_imports_its_newest_snapshot() {
    let imported = interop::import(&fixtures(), &opts()).unwrap();
    assert_eq!(imported.state.last_index(), 42);
    assert!(imported.files[0].ends_with("snapshot_42.bin.zstd"));
}

#[test]
fn export_then_import_gives_the_same_tree_digest_and_bytes() {
    let first = interop::import(&fixtures().join("snapshot_42.bin.zstd"), &opts()).unwrap().state;
    let bytes = keeper::export(&first).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(keeper::file_name(first.last_index()));
    std::fs::write(&file, &bytes).unwrap();
    let back = interop::import(&file, &opts()).unwrap();
    assert_eq!(back.digest_matches(), Some(true));
    let second = back.state;
    assert_eq!(second.tree().paths(), first.tree().paths());
    assert_eq!(second.tree().digest(), first.tree().digest());
    assert_eq!(second.sessions(), first.sessions());
    assert_eq!(keeper::export(&second).unwrap(), bytes, "the same state writes the same file");
}

#[test]
fn damaged_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixtures().join("snapshot_42.bin.zstd")).unwrap();
    let body = zstd::stream::decode_all(good.as_slice()).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"not a snapshot at all".to_vec()),
        ("truncated zstd", good[..good.len() / 2].to_vec()),
        ("truncated body", zstd::bulk::compress(&body[..body.len() - 9], 3).unwrap()),
        ("version 9", {
            let mut b = body.clone();
            b[0] = 9;
            zstd::bulk::compress(&b, 3).unwrap()
        }),
    ];
    for (what, bytes) in cases {
        let file = dir.path().join(format!("snapshot_7_{}.bin.zstd", what.replace(' ', "_")));
        std::fs::write(&file, bytes).unwrap();
        match interop::import(&file, &opts()) {
            Err(e @ ImportError::Format { .. }) => {
                assert!(e.to_string().contains(&file.display().to_string()), "{what}: {e}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // A changed byte of node data reads, but no longer has the digest the file stores.
    let at = body.windows(6).position(|w| w == b"s3cr3t").unwrap();
    let mut b = body.clone();
    b[at] = b'S';
    let file = dir.path().join("snapshot_8.bin.zstd");
    std::fs::write(&file, zstd::bulk::compress(&b, 3).unwrap()).unwrap();
    assert_eq!(interop::import(&file, &opts()).unwrap().digest_matches(), Some(false));
}

#[test]
fn every_truncation_and_flipped_byte_is_an_error_or_a_tree_never_a_panic() {
    let good = std::fs::read(fixtures().join("snapshot_42.bin.zstd")).unwrap();
    let body = zstd::stream::decode_all(good.as_slice()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snapshot_1.bin.zstd");
    let mut outcomes = [0usize; 2];
    for i in 0..body.len() {
        let mut flipped = body.clone();
        flipped[i] ^= 0xff;
        for variant in [body[..i].to_vec(), flipped] {
            std::fs::write(&file, zstd::bulk::compress(&variant, 1).unwrap()).unwrap();
            outcomes[usize::from(interop::import(&file, &opts()).is_ok())] += 1;
        }
    }
    assert!(outcomes[0] > body.len(), "truncations are refused: {outcomes:?}");
}
