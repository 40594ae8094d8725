//! `testkeeper publish` against testkeeper and against Apache ZooKeeper 3.8 must write the
//! same normalized result (docs/publisher.md). ZooKeeper missing skips, or fails under
//! TESTKEEPER_REQUIRE_EXTERNAL=1.

use std::process::Command;
use std::time::Duration;

use testkeeper_tests::env::{external_prereq, testkeeper_bin, zookeeper_installed};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::{TestkeeperProcess, ZooKeeperConfig, ZooKeeperProcess};

fn publish(addr: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result.json");
    let mut cmd = Command::new(testkeeper_bin());
    cmd.args(["publish", "--target", addr, "--hosts", "3", "--seed", "5", "--json"]).arg(&out).env("RUST_LOG", "warn");
    let res = run_bounded(&mut cmd, b"", Duration::from_secs(120)).expect("running testkeeper publish");
    assert!(res.success(), "publish against {addr} failed:\n{}", res.combined());
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn same_normalized_result_on_testkeeper_and_zookeeper() {
    let tk = TestkeeperProcess::start(&[]);
    let ours = publish(&tk.addr().to_string());
    assert_eq!(ours["outcome"], "completed", "{ours:#}");
    assert_eq!(ours["phases"], serde_json::json!(["bootstrap", "admitted", "published", "cleanup", "idle"]));
    if !external_prereq("Apache ZooKeeper 3.8 (Debian zookeeper)", zookeeper_installed()) {
        return;
    }
    let zk = ZooKeeperProcess::start_with(ZooKeeperConfig::default());
    let theirs = publish(&zk.connect_string());
    assert_eq!(ours, theirs, "normalized results differ");
}
