//! Path validation, differentially: the same paths (fixed cases from issue 16 and seeded random
//! ones mixing `.`, `/`, multi-byte, control, private-use and non-BMP characters) are created,
//! set, read and deleted on a live Apache ZooKeeper 3.8 and on `testkeeper --flavor zookeeper`,
//! and every answer must match. ZooKeeper's `PathUtils.validatePath` walks UTF-16 code units;
//! testkeeper once mixed character and byte positions (`/é/.` accepted, `/€/.x` refused).
//! The seed is printed; `TESTKEEPER_SEED=N` replays a run.

use std::net::SocketAddr;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::Acl;

/// Parents the cases are created under, so that validation (not a missing parent) decides.
const PARENTS: [&str; 5] = ["/pv", "/pv/a", "/pv/é", "/pv/€", "/pv/éé"];

/// The cases of issue 16 and the edges of `validatePath`, relative to `/pv`.
const FIXED: &[&str] = &[
    "/.",
    "/..",
    "/...",
    "/.x",
    "/..x",
    "/x.",
    "/x..",
    "/a/.",
    "/a/..",
    "/a/...",
    "/é/.",
    "/é/..",
    "/é/...",
    "/€/.",
    "/€/..",
    "/€/.x",
    "/€/..x",
    "/éé/.a",
    "/éé/..",
    "/é/x.",
    "//x",
    "/x/",
    "/a/./b",
    "/a/../b",
    "/\u{1}",
    "/\u{1f}",
    " ",
    "/ ",
    "/\u{7f}",
    "/\u{9f}",
    "/\u{a0}",
    "/\u{d7ff}",
    "/\u{e000}",
    "/\u{f8ff}",
    "/\u{f900}",
    "/\u{ffef}",
    "/\u{fff0}",
    "/\u{fffd}",
    "/\u{ffff}",
    "/\u{1f600}",
    "/a\u{10000}",
    "/e\u{301}",
    "/日本",
    "/a b",
    "/~",
    "/é",
];

/// Characters the random segments draw from.
const ALPHABET: &[char] = &['.', '.', '.', 'a', 'é', '€', '/', '\u{1}', '\u{a0}', '\u{e000}', '\u{1f600}', '\u{ffff}'];

fn seed() -> u64 {
    std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    })
}

fn cases(seed: u64) -> Vec<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out: Vec<String> = FIXED.iter().map(|c| format!("/pv{c}")).collect();
    // Absolute oddities: empty, relative, the root, a double slash.
    out.extend(["", "pv", "/", "//", "/pv/"].map(String::from));
    for _ in 0..200 {
        let parent = PARENTS[rng.gen_range(0..PARENTS.len())];
        let len = rng.gen_range(1..5);
        let seg: String = (0..len).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())]).collect();
        out.push(format!("{parent}/{seg}"));
    }
    out
}

fn code<T>(r: Result<T, ClientError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(ClientError::Zk(e)) => format!("{e:?}"),
        Err(e) => panic!("not a server answer: {e:?}"),
    }
}

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f).await.expect("no answer within 10 s")
}

/// What one server answers for every case: create, getData, getChildren, setData, exists,
/// delete (each whatever the one before answered).
async fn probe(addr: SocketAddr, cases: &[String]) -> Vec<String> {
    let c = bounded(Client::connect(addr, ConnectOptions::default())).await.unwrap();
    for p in PARENTS {
        bounded(c.create(p, b"", &Acl::open(), 0)).await.unwrap();
    }
    let mut out = Vec::new();
    for p in cases {
        let create = code(bounded(c.create(p, b"", &Acl::open(), 0)).await);
        let get = code(bounded(c.get_data(p, false)).await);
        let children = code(bounded(c.get_children(p, false)).await);
        let set = code(bounded(c.set_data(p, b"x", -1)).await);
        let exists = match bounded(c.exists(p, false)).await {
            Ok(Some(_)) => "yes".to_string(),
            Ok(None) => "no".to_string(),
            other => code(other),
        };
        // Deleting also cleans up what was made, so later cases see the same tree on both.
        let delete = code(bounded(c.delete(p, -1)).await);
        out.push(format!(
            "{p:?}: create {create} get {get} children {children} set {set} exists {exists} delete {delete}"
        ));
    }
    let _ = bounded(c.close()).await;
    out
}

#[test]
fn path_validation_matches_zookeeper_3_8() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let seed = seed();
    eprintln!("path cases seed {seed} (replay with TESTKEEPER_SEED={seed})");
    let cases = cases(seed);
    let zk = ZooKeeperProcess::start();
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let want = rt.block_on(probe(zk.addr(), &cases));
    let got = rt.block_on(probe(tk.addr(), &cases));
    let diffs: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("  zookeeper  {w}\n  testkeeper {g}"))
        .collect();
    assert!(diffs.is_empty(), "{} of {} paths differ (seed {seed}):\n{}", diffs.len(), cases.len(), diffs.join("\n"));
    // The cases, as ZooKeeper answers them (so the oracle itself is checked too).
    for (case, create) in [
        ("/pv/é/.", "BadArguments"),
        ("/pv/é/..", "BadArguments"),
        ("/pv/€/.x", "ok"),
        ("/pv/éé/.a", "ok"),
        ("/pv/€/..x", "ok"),
    ] {
        let line = want.iter().find(|l| l.starts_with(&format!("{case:?}:"))).unwrap();
        assert!(line.contains(&format!("create {create} ")), "ZooKeeper: {line}");
    }
}
