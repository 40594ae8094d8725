//! `testkeeper snapshot inspect` on snapshots a real server wrote: the header and sessions it
//! prints, the tree it dumps, and the exit status and message for a file that does not verify
//! (a flipped byte, a digest that differs, a file renamed to another index).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

fn inspect(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_testkeeper")).args(["snapshot", "inspect"]).args(args).output().unwrap()
}

/// What the server held when it wrote the snapshot.
struct Written {
    file: PathBuf,
    index: u64,
    digest: u64,
    nodes: usize,
    session: i64,
}

/// Starts a server on `dir`, writes a small tree (text, binary and empty data, an ephemeral,
/// sequential children), takes a snapshot and shuts down (which waits for the file).
fn write_snapshot(dir: &Path) -> Written {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut cfg = ServerConfig::new(Flavor::Keeper);
        cfg.listen = "127.0.0.1:0".parse().unwrap();
        cfg.data_dir = Some(dir.to_path_buf());
        let server = TestKeeper::start(cfg).await.unwrap();
        let c = Client::connect(server.addr(), ConnectOptions::default()).await.unwrap();
        let open = Acl::open();
        c.create("/a", b"hello", &open, create_mode::PERSISTENT).await.unwrap();
        c.create("/a/bin", &[0xff, 0x00, 0x01], &open, create_mode::PERSISTENT).await.unwrap();
        c.create("/a/empty", b"", &open, create_mode::PERSISTENT).await.unwrap();
        c.create("/e", b"", &open, create_mode::EPHEMERAL).await.unwrap();
        for _ in 0..3 {
            c.create("/a/s-", b"x", &open, create_mode::PERSISTENT_SEQUENTIAL).await.unwrap();
        }
        c.set_data("/a", b"hello again", 0).await.unwrap();
        let index = server.snapshot().expect("a snapshot starts");
        let written = Written {
            file: dir.join("snapshots").join(format!("snapshot_{index}.bin.zst")),
            index,
            digest: server.digest(),
            nodes: server.node_count(),
            session: c.session_id(),
        };
        // The client's socket closes without a closeSession: the session is in the snapshot.
        drop(c);
        server.shutdown().await;
        written
    })
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn inspect_prints_the_header_and_sessions_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let file = w.file.to_str().unwrap();
    let out = inspect(&[file]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    for needle in [
        format!("index: {}\n", w.index),
        "digest version: 5\n".to_string(),
        format!("digest: {} (recomputed from the tree: equal)\n", w.digest),
        format!("node count: {}\n", w.nodes),
        "checksum: ok\n".to_string(),
        "sessions: 1\n".to_string(),
        format!("  {:#x} timeout 30000 ms\n", w.session),
        "verified: yes\n".to_string(),
    ] {
        assert!(text.contains(&needle), "{needle:?} in\n{text}");
    }

    let out = inspect(&[file, "--json"]);
    assert!(out.status.success());
    let j: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(j["index"], w.index.to_string());
    assert_eq!(j["digest"], w.digest.to_string(), "64-bit values are strings");
    assert_eq!(j["node_count"], w.nodes.to_string());
    assert_eq!(j["sessions"][0]["id"], format!("{:#x}", w.session), "session ids in hex, as in the text");
    assert!(j["zxid"].as_str().is_some_and(|z| z.starts_with("0x")), "zxids in hex, as in the text: {}", j["zxid"]);
    assert_eq!(
        (j["checksum_ok"].clone(), j["digest_ok"].clone(), j["verified"].clone()),
        (true.into(), true.into(), true.into())
    );
}

#[test]
fn dump_writes_one_json_line_per_node_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let out = inspect(&[w.file.to_str().unwrap(), "--dump"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("verified: yes"), "the summary goes to stderr: {}", stderr(&out));
    let nodes: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(nodes.len(), w.nodes);
    let paths: Vec<&str> = nodes.iter().map(|n| n["path"].as_str().unwrap()).collect();
    assert_eq!(paths[0], "/");
    assert_eq!(
        &paths[1..6],
        ["/a", "/a/bin", "/a/empty", "/a/s-0000000002", "/a/s-0000000003"],
        "depth first, children by name (Keeper numbers sequentials by every child created)"
    );
    let by = |p: &str| nodes.iter().find(|n| n["path"] == p).unwrap();
    let a = by("/a");
    assert_eq!(
        (a["data"].as_str(), a["data_base64"].as_bool(), a["version"].as_i64()),
        (Some("hello again"), Some(false), Some(1))
    );
    assert_eq!(a["seq"], "5", "the sequential counter survives");
    let bin = by("/a/bin");
    assert_eq!((bin["data"].as_str(), bin["data_base64"].as_bool()), (Some("/wAB"), Some(true)));
    assert_eq!(by("/a/empty")["data"], "");
    assert_eq!(by("/e")["ephemeral_owner"], format!("{:#x}", w.session));
    assert_eq!(by("/a")["ephemeral_owner"], "0x0");
    assert!(a["mzxid"].as_str().is_some_and(|z| z.starts_with("0x")), "{a}");
    assert_eq!(by("/a")["acl"][0]["scheme"], "world");
    assert!(a["czxid"].is_string() && a["ctime"].is_string(), "64-bit fields are strings: {a}");
}

/// The decompressed body, changed by `f`, written back compressed under the same name.
fn rewrite(file: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut body = zstd::stream::decode_all(&std::fs::read(file).unwrap()[..]).unwrap();
    f(&mut body);
    std::fs::write(file, zstd::bulk::compress(&body, 3).unwrap()).unwrap();
}

/// Recomputes the trailing CRC-32, so only what the change did to the tree can be caught.
fn reseal(body: &mut [u8]) {
    let n = body.len() - 4;
    let crc = crc32fast::hash(&body[..n]);
    body[n..].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn a_file_that_does_not_verify_exits_non_zero_naming_what_differed() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let file = w.file.to_str().unwrap();
    let pristine = std::fs::read(&w.file).unwrap();
    let fails = |needles: &[&str]| {
        let out = inspect(&[file]);
        assert!(!out.status.success(), "{}", stdout(&out));
        let err = stderr(&out);
        for n in needles {
            assert!(err.contains(n), "{n:?} in {err}");
        }
        out
    };
    let index = format!("snapshot at index {} does not verify", w.index);

    // A flipped bit in a node's data: the checksum catches it.
    rewrite(&w.file, |b| {
        let at = b.windows(5).position(|x| x == b"hello").unwrap();
        b[at] ^= 0x20;
    });
    let out = fails(&[file, &index, "checksum mismatch"]);
    assert!(stdout(&out).contains("checksum: MISMATCH"));

    // The same flip with the checksum recomputed: the digest recomputed from the tree differs.
    std::fs::write(&w.file, &pristine).unwrap();
    rewrite(&w.file, |b| {
        let at = b.windows(5).position(|x| x == b"hello").unwrap();
        b[at] ^= 0x20;
        reseal(b);
    });
    let out = fails(&[file, &index, &format!("the snapshot says {}", w.digest)]);
    assert!(stdout(&out).contains("DIFFERS"), "{}", stdout(&out));

    // A flipped byte of the compressed file itself.
    let mut bad = pristine.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    std::fs::write(&w.file, &bad).unwrap();
    fails(&[file]);

    // Intact, but under another index's name.
    let renamed = dir.path().join("snapshot_7.bin.zst");
    std::fs::write(&renamed, &pristine).unwrap();
    let out = inspect(&[renamed.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!("the file name says index 7, the snapshot holds {}", w.index)),
        "{}",
        stderr(&out)
    );

    // Not a snapshot at all.
    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"not zstd").unwrap();
    let out = inspect(&[junk.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot read it as a zstd snapshot"), "{}", stderr(&out));
}
