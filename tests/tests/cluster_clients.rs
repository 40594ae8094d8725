//! kazoo and Apache ZooKeeper's Java client keep working against a 3-node cluster, embedded
//! (`testkeeper cluster-embedded`) and as three `testkeeper serve --peers` processes with data
//! directories, while its leader is killed and restarted in a loop (tests/src/ledger.rs): no
//! acknowledged write is lost on any node, nothing unacknowledged appears, every node's digest
//! is equal whenever two nodes are at the same applied index, and sessions behave as each
//! flavor's server does.
//!
//! The same run against a 3-server Apache ZooKeeper 3.8 ensemble shows what ZooKeeper's own
//! clients see there, and so what the zookeeper flavor must match: one session throughout
//! (resumed on another server), a disconnect at every leader loss (a follower without a leader
//! drops its clients), the session's ephemeral still on every server.
//!
//! Keeper flavor: Keeper has no session resumption (docs/flavors.md), so a client whose server
//! dies comes back in a new session, with no LOST/Expired event; the old session's ephemeral
//! stays, owned by the old session, until that session times out. Followers keep their
//! clients while there is no leader (Keeper answers them with errors instead).

use std::process::Command;

use testkeeper_tests::cluster_control::ClusterControl;
use testkeeper_tests::cluster_embedded::EmbeddedCluster;
use testkeeper_tests::env::{kazoo_venv_ready, repo_root, zookeeper_installed};
use testkeeper_tests::java;
use testkeeper_tests::ledger::{self, KillLoop, LedgerReport};
use testkeeper_tests::{require_external, venv_python, ClusterOptions, TestkeeperCluster, ZooKeeperEnsemble};

/// Leader kills per run, and writes the client must finish between steps.
const ROUNDS: usize = 5;
const ACKS_PER_STEP: usize = 15;

fn seed() -> u64 {
    let s = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(13);
    println!("seed {s} (TESTKEEPER_SEED={s} replays it)");
    s
}

fn plan(seed: u64) -> KillLoop {
    KillLoop { rounds: ROUNDS, acks_per_step: ACKS_PER_STEP, seed }
}

fn kazoo() -> Command {
    let mut c = Command::new(venv_python());
    c.arg(repo_root().join("tests/kazoo/cluster_ledger.py"));
    c
}

/// Compiles tests/java/ClusterLedger.java into `dir`; the command that runs it.
fn java_client(dir: &std::path::Path) -> Command {
    java::compile(&["ClusterLedger.java", "InOrderHosts.java"], java::ZOOKEEPER_CP, dir);
    java::command(dir, java::ZOOKEEPER_CP, "ClusterLedger")
}

fn have_java() -> bool {
    zookeeper_installed() && testkeeper_tests::env::find_in_path("javac").is_some()
}

/// How the client's connection went: (disconnects, reconnects, session expiries).
fn transitions(r: &LedgerReport) -> (usize, usize, usize) {
    let count = |names: &[&str]| {
        r.states.iter().filter(|s| names.iter().any(|n| s.split_whitespace().nth(1) == Some(*n))).count()
    };
    // kazoo: SUSPENDED/CONNECTED/LOST; Java: Disconnected/SyncConnected/Expired. A keeper node
    // without a leader answers the handshake as Keeper does (protocol 42, session 0, then the
    // connection ends), which a client may report as connected to session 0x0 for a moment:
    // that is not a session, so it is not a reconnect.
    let up = count(&["CONNECTED", "SyncConnected"])
        - r.states
            .iter()
            .filter(|s| s.ends_with("session=0x0") && ["CONNECTED", "SyncConnected"].iter().any(|n| s.contains(n)))
            .count();
    (count(&["SUSPENDED", "Disconnected"]), up.saturating_sub(1), count(&["LOST", "Expired"]))
}

/// What ZooKeeper's clients see on an ensemble, and the zookeeper flavor must show as well.
fn zookeeper_sessions(label: &str, r: &LedgerReport) {
    let (down, back, lost) = transitions(r);
    assert_eq!(lost, 0, "{label}: the session must never expire: {:?}", r.states);
    assert_eq!(r.sessions(), std::slice::from_ref(&r.start_session), "{label}: one session throughout: {:?}", r.states);
    assert_eq!(r.final_session, r.start_session, "{label}");
    // Every leader loss drops every client (followers stop serving without a leader).
    assert!(down >= r.killed.len(), "{label}: {down} disconnects for {} leader kills: {:?}", r.killed.len(), r.states);
    assert!(back >= r.killed.len(), "{label}: {back} reconnects: {:?}", r.states);
    let session = i64::from_str_radix(r.start_session.trim_start_matches("0x"), 16).unwrap();
    for (id, owner) in &r.ephemeral_owner {
        assert_eq!(*owner, Some(session), "{label}: node {id} keeps the session's ephemeral");
    }
}

/// Keeper flavor: no resumption, so every reconnect is a new session; nothing expires the
/// client's view, and the first session's ephemeral, where it still is, keeps its owner.
fn keeper_sessions(label: &str, r: &LedgerReport) {
    let (_, back, lost) = transitions(r);
    assert_eq!(lost, 0, "{label}: no LOST/Expired event: {:?}", r.states);
    assert_eq!(r.sessions().len(), back + 1, "{label}: a new session per reconnect: {:?}", r.states);
    assert_eq!(r.sessions().last(), Some(&r.final_session), "{label}: {:?}", r.states);
    let first = i64::from_str_radix(r.start_session.trim_start_matches("0x"), 16).unwrap();
    for (id, owner) in &r.ephemeral_owner {
        assert!(owner.is_none_or(|o| o == first), "{label}: node {id}: ephemeral owned by {owner:?}");
    }
    eprintln!("{label}: what the client saw: {:?}", r.states);
}

fn check(flavor: &str, label: &str, r: &LedgerReport) {
    assert_eq!(r.killed.len(), ROUNDS, "{label}");
    assert!(r.acked.len() >= 3 * ROUNDS * ACKS_PER_STEP, "{label}: {} writes", r.acked.len());
    assert!(r.digest_compared > 0, "{label}: no two nodes were ever compared at one index");
    match flavor {
        "zookeeper" => zookeeper_sessions(label, r),
        _ => keeper_sessions(label, r),
    }
}

fn embedded(flavor: &str, client: &str, cmd: &mut Command) {
    let seed = seed();
    let mut c = EmbeddedCluster::start(3, flavor, seed).unwrap_or_else(|e| panic!("{e}"));
    kill_loop(&mut c, flavor, &format!("{client} on an embedded {flavor} cluster"), cmd, seed);
}

/// Three `serve --id N --peers ...` processes, each on its own data directory (a killed node
/// comes back with its Raft log and vote, as Raft requires).
fn processes(flavor: &str, client: &str, cmd: &mut Command) {
    let seed = seed();
    let mut o = ClusterOptions::new(flavor);
    (o.seed, o.data_dirs) = (seed, true);
    let mut c = TestkeeperCluster::start(&o).unwrap_or_else(|e| panic!("{e}"));
    kill_loop(&mut c, flavor, &format!("{client} on {flavor} serve processes"), cmd, seed);
}

/// The client's ledger through the leader kills on `c`, once it has a leader; then the checks.
fn kill_loop(c: &mut dyn ClusterControl, flavor: &str, label: &str, cmd: &mut Command, seed: u64) {
    c.await_leader(std::time::Duration::from_secs(20)).unwrap_or_else(|e| panic!("{e}"));
    let r = ledger::run(c, label, cmd, plan(seed)).unwrap_or_else(|e| panic!("{e}"));
    check(flavor, label, &r);
}

#[test]
fn kazoo_keeps_working_while_the_leader_of_an_embedded_cluster_is_killed_in_a_loop() {
    require_external!("kazoo venv", kazoo_venv_ready());
    for flavor in ["zookeeper", "keeper"] {
        embedded(flavor, "kazoo", &mut kazoo());
    }
}

#[test]
fn the_java_client_keeps_working_while_the_leader_of_an_embedded_cluster_is_killed_in_a_loop() {
    require_external!("javac and Debian's ZooKeeper client", have_java());
    let dir = tempfile::tempdir().unwrap();
    for flavor in ["zookeeper", "keeper"] {
        embedded(flavor, "java", &mut java_client(dir.path()));
    }
}

/// The oracle: the same loop on ZooKeeper 3.8 shows the sessions the zookeeper flavor must
/// show (and that the ledger check passes on the real thing). ZooKeeper's `mntr` has no
/// applied index, so only the ledger is compared there.
#[test]
fn the_same_loop_on_a_zookeeper_ensemble_shows_what_the_zookeeper_flavor_must() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    require_external!("kazoo venv", kazoo_venv_ready());
    let seed = seed();
    let mut zk = ZooKeeperEnsemble::start().unwrap_or_else(|e| panic!("{e}"));
    let plan = KillLoop { rounds: 2, ..plan(seed) };
    let r = ledger::run(&mut zk, "kazoo on ZooKeeper 3.8", &mut kazoo(), plan).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.killed.len(), 2);
    zookeeper_sessions("kazoo on ZooKeeper 3.8", &r);
}

#[test]
fn kazoo_keeps_working_while_the_leader_process_is_killed_in_a_loop() {
    require_external!("kazoo venv", kazoo_venv_ready());
    for flavor in ["zookeeper", "keeper"] {
        processes(flavor, "kazoo", &mut kazoo());
    }
}

#[test]
fn the_java_client_keeps_working_while_the_leader_process_is_killed_in_a_loop() {
    require_external!("javac and Debian's ZooKeeper client", have_java());
    let dir = tempfile::tempdir().unwrap();
    for flavor in ["zookeeper", "keeper"] {
        processes(flavor, "java", &mut java_client(dir.path()));
    }
}
