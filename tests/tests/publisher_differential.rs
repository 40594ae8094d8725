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

fn publish_two(target: &str, reference: &str) -> (bool, String) {
    let mut cmd = Command::new(testkeeper_bin());
    cmd.args(["publish", "--target", target, "--reference", reference, "--hosts", "3", "--seed", "5"])
        .env("RUST_LOG", "warn");
    let res = run_bounded(&mut cmd, b"", Duration::from_secs(240)).expect("running testkeeper publish");
    eprintln!("{}", res.combined());
    (res.success(), res.stdout.clone())
}

/// `--reference` runs the same publication on both and prints each in words and the
/// normalized difference: none between testkeeper and ZooKeeper, the outcome when the
/// reference cannot take the authority's CAS.
#[test]
fn publish_against_a_reference_prints_both_and_the_difference() {
    let tk = TestkeeperProcess::start(&[]);
    let other = if external_prereq("Apache ZooKeeper 3.8 (Debian zookeeper)", zookeeper_installed()) {
        Target::Zk(ZooKeeperProcess::start_with(ZooKeeperConfig::default()))
    } else {
        Target::Tk(TestkeeperProcess::start(&["--flavor", "zookeeper"]))
    };
    let (ok, out) = publish_two(&tk.addr().to_string(), &other.addr());
    assert!(ok, "{out}");
    assert!(out.contains(&format!("target {}: completed", tk.addr())), "{out}");
    assert!(out.contains(&format!("reference {}: completed", other.addr())), "{out}");
    assert!(out.contains("phases:    bootstrap -> admitted -> published -> cleanup -> idle"), "{out}");
    assert!(out.contains("permit:    dispatch for db.events at epoch 1") && out.contains("host host2:9000:"), "{out}");
    assert!(out.contains("no difference") && !out.contains("Some("), "{out}");

    // The reference refuses the admission CAS once: its publication is refused, and that is
    // the difference.
    let fresh = TestkeeperProcess::start(&[]);
    let broken =
        TestkeeperProcess::start(&["--fault", "error:code=-103,op=setData,path=/keeper_map_tables/**,count=1"]);
    let (ok, out) = publish_two(&fresh.addr().to_string(), &broken.addr().to_string());
    assert!(!ok, "{out}");
    assert!(
        out.contains("difference(s) in the normalized results") && out.contains("outcome: target \"completed\""),
        "{out}"
    );
}

/// The reference server: Apache ZooKeeper when installed, else testkeeper's zookeeper flavor.
enum Target {
    Zk(ZooKeeperProcess),
    Tk(TestkeeperProcess),
}

impl Target {
    fn addr(&self) -> String {
        match self {
            Target::Zk(z) => z.connect_string(),
            Target::Tk(t) => t.addr().to_string(),
        }
    }
}
