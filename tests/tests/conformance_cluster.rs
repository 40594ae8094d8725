//! The cluster scenarios (`conformance/scenarios/cluster.txt`) against a real 3-server Apache
//! ZooKeeper 3.8 ensemble that the test starts itself: stale follower reads then sync, a
//! session moving between servers, writes through a follower. The reference is the golden
//! transcript (recorded on one server, which plays every node) and, live, testkeeper's
//! zookeeper flavor: a single server is trivially one consistent ensemble, so an ensemble must
//! read exactly like it.

use std::process::Command;

use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{repo_root, require_external, testkeeper_bin, TestkeeperProcess, ZooKeeperEnsemble};

fn conform(args: &[&str]) -> (bool, String) {
    let out = Command::new(testkeeper_bin()).arg("conform").args(args).output().expect("run testkeeper conform");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    (out.status.success(), text)
}

#[test]
fn cluster_scenarios_pass_on_a_three_server_zookeeper_ensemble() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperEnsemble::start().unwrap_or_else(|e| panic!("{e}"));
    let target = zk.connect_string();
    let golden = repo_root().join("conformance/golden/zookeeper-3.8.jsonl");
    let (ok, text) = conform(&["--target", &target, "--expect", golden.to_str().unwrap(), "--filter", "cluster_"]);
    assert!(ok, "cluster scenarios on the ensemble differ from the golden transcript:\n{text}");
    let ran = text.lines().filter(|l| l.starts_with("pass ") && l.contains(" cluster_")).count();
    assert!(ran >= 9, "every cluster scenario runs on a 3-server target, {ran} passed:\n{text}");
    assert!(!text.contains("\nskipped "), "{text}");

    // Live: the same scenarios against testkeeper playing all three nodes.
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let (ok, text) = conform(&["--target", &target, "--reference", &tk.addr().to_string(), "--filter", "cluster_"]);
    assert!(ok, "the ensemble differs from testkeeper's zookeeper flavor:\n{text}");

    // Every server took part: the sessions were spread over them.
    let mut modes = zk.modes();
    modes.sort();
    assert_eq!(modes, ["follower", "follower", "leader"]);
}

#[test]
fn a_one_server_target_skips_the_cluster_scenarios_and_says_why() {
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let (ok, text) = conform(&["--target", &tk.addr().to_string(), "--filter", "cluster_session_moves"]);
    assert!(ok, "{text}");
    assert!(text.contains("skipped") && text.contains("needs 3 servers in --target, got 1"), "{text}");
}
