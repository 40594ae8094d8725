//! A 3-server Apache ZooKeeper 3.8 ensemble is the oracle of the zookeeper flavor's cluster
//! behaviour: the same probes (tests/src/cluster_probes.rs) run on the ensemble and on a 3-node
//! embedded testkeeper cluster, and their transcripts must be equal line for line: a session
//! moving between servers (what its old connection gets), a client while the leader is gone
//! and while the quorum is lost. The conformance suite's cluster scenarios (stale follower
//! reads then sync, writes through a follower, watches on every server, ...) run on the
//! testkeeper cluster too, against the golden transcript recorded on ZooKeeper (zookeeper
//! flavor) and against a single keeper-flavor server (keeper flavor: one server is trivially
//! one consistent cluster).

use std::process::Command;
use std::time::Duration;

use testkeeper_tests::cluster_control::ClusterControl;
use testkeeper_tests::cluster_embedded::EmbeddedCluster;
use testkeeper_tests::cluster_probes::{self, OldRequest};
use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{repo_root, require_external, testkeeper_bin, TestkeeperProcess, ZooKeeperEnsemble};

fn seed() -> u64 {
    let s = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(17);
    println!("seed {s} (TESTKEEPER_SEED={s} replays it)");
    s
}

/// Prints both transcripts; returns the lines where testkeeper differs.
fn compare(what: &str, zk: &[String], tk: &[String]) -> Vec<String> {
    eprintln!("{what}:\n  ZooKeeper 3.8:        {}\n  testkeeper zookeeper: {}", zk.join("\n    "), tk.join("\n    "));
    let n = zk.len().max(tk.len());
    let line = |t: &[String], i: usize| t.get(i).cloned().unwrap_or_else(|| "(nothing)".into());
    (0..n)
        .filter(|i| line(zk, *i) != line(tk, *i))
        .map(|i| format!("{what}: ZooKeeper '{}', testkeeper '{}'", line(zk, i), line(tk, i)))
        .collect()
}

#[test]
fn a_moved_sessions_old_connection_gets_what_it_gets_on_zookeeper() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let mut zk = ZooKeeperEnsemble::start().unwrap_or_else(|e| panic!("{e}"));
    let mut tk = EmbeddedCluster::start(3, "zookeeper", seed()).unwrap_or_else(|e| panic!("{e}"));
    let mut diffs = Vec::new();
    for on_leader in [false, true] {
        for req in [OldRequest::Read, OldRequest::Sync, OldRequest::Write] {
            let want = cluster_probes::session_move(&mut zk, on_leader, req).unwrap_or_else(|e| panic!("{e}"));
            let got = cluster_probes::session_move(&mut tk, on_leader, req).unwrap_or_else(|e| panic!("{e}"));
            let on = if on_leader { "leader" } else { "follower" };
            diffs.extend(compare(&format!("session moved, old connection on the {on}, {req:?}"), &want, &got));
        }
    }
    assert!(diffs.is_empty(), "the zookeeper flavor differs from the ensemble:\n{}", diffs.join("\n"));
}

#[test]
fn a_client_while_the_leader_is_gone_gets_what_it_gets_on_zookeeper() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let mut zk = ZooKeeperEnsemble::start().unwrap_or_else(|e| panic!("{e}"));
    let want = cluster_probes::leader_gone(&mut zk).unwrap_or_else(|e| panic!("{e}"));
    drop(zk);
    let mut tk = EmbeddedCluster::start(3, "zookeeper", seed()).unwrap_or_else(|e| panic!("{e}"));
    let got = cluster_probes::leader_gone(&mut tk).unwrap_or_else(|e| panic!("{e}"));
    let diffs = compare("the leader gone, then the quorum", &want, &got);
    assert!(diffs.is_empty(), "the zookeeper flavor differs from the ensemble:\n{}", diffs.join("\n"));
}

fn conform(args: &[&str]) -> (bool, String) {
    let out = Command::new(testkeeper_bin()).arg("conform").args(args).output().expect("run testkeeper conform");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    (out.status.success(), text)
}

#[test]
fn the_cluster_scenarios_pass_on_an_embedded_cluster_in_both_flavors() {
    let seed = seed();
    let mut zk = EmbeddedCluster::start(3, "zookeeper", seed).unwrap_or_else(|e| panic!("{e}"));
    zk.await_leader(Duration::from_secs(20)).unwrap_or_else(|e| panic!("{e}"));
    let golden = repo_root().join("conformance/golden/zookeeper-3.8.jsonl");
    let target = zk.connect_string();
    let (ok, text) = conform(&["--target", &target, "--expect", golden.to_str().unwrap(), "--filter", "cluster_"]);
    assert!(ok, "zookeeper flavor cluster vs the transcript recorded on ZooKeeper 3.8:\n{text}");
    let ran = text.lines().filter(|l| l.starts_with("pass ") && l.contains(" cluster_")).count();
    assert!(ran >= 9, "every cluster scenario ran on the 3-node target, {ran} passed:\n{text}");
    drop(zk);
    let mut keeper = EmbeddedCluster::start(3, "keeper", seed).unwrap_or_else(|e| panic!("{e}"));
    keeper.await_leader(Duration::from_secs(20)).unwrap_or_else(|e| panic!("{e}"));
    let one = TestkeeperProcess::start(&["--flavor", "keeper"]);
    let (ok, text) = conform(&[
        "--target",
        &keeper.connect_string(),
        "--reference",
        &one.addr().to_string(),
        "--filter",
        "cluster_",
    ]);
    assert!(ok, "keeper flavor cluster vs one keeper server:\n{text}");
    assert!(!text.contains("\nskipped "), "{text}");
}
