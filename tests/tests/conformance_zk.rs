//! The conformance suite (`testkeeper conform`) end to end: against a live Apache ZooKeeper
//! 3.8 reference, against the stored ZooKeeper 3.8 golden transcript, and against a doctored
//! golden file that must be caught.
//!
//! Re-recording the golden file from a live ZooKeeper (see docs/conformance.md):
//! `cargo test -p testkeeper-tests --test conformance_zk -- --ignored record_golden`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{repo_root, require_external, testkeeper_bin, TestkeeperProcess, ZooKeeperProcess};

fn golden() -> PathBuf {
    repo_root().join("conformance/golden/zookeeper-3.8.jsonl")
}

fn conform(args: &[&str]) -> (Output, String) {
    let out = Command::new(testkeeper_bin()).arg("conform").args(args).output().expect("run testkeeper conform");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    (out, text)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn zookeeper_flavor_matches_live_zookeeper_3_8() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let dir = tempfile::tempdir().unwrap();
    let (junit, md) = (dir.path().join("junit.xml"), dir.path().join("report.md"));
    let (out, text) = conform(&[
        "--target",
        &tk.addr().to_string(),
        "--reference",
        &zk.addr().to_string(),
        "--junit",
        junit.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "unexpected differences:\n{text}");
    assert!(text.contains("FAIL 0"), "{text}");
    let junit = read(&junit);
    assert!(junit.contains("failures=\"0\"") && junit.matches("<testcase").count() >= 20, "{junit}");
    let md = read(&md);
    assert!(md.contains("| `ch_ddl_queue` | pass |"), "{md}");
}

#[test]
fn keeper_flavor_differs_from_zookeeper_only_as_expected() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let tk = TestkeeperProcess::start(&["--flavor", "keeper"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let (out, text) = conform(&[
        "--target",
        &tk.addr().to_string(),
        "--reference",
        &zk.addr().to_string(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "unexpected differences:\n{text}");
    let report: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    let expected =
        report["scenarios"].as_array().unwrap().iter().filter(|s| s["status"] == "expected_difference").count();
    assert!(expected > 0, "keeper flavor should show its known differences: {text}");
}

#[test]
fn zookeeper_flavor_matches_the_golden_transcript() {
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let (out, text) = conform(&["--target", &tk.addr().to_string(), "--expect", golden().to_str().unwrap()]);
    assert!(out.status.success(), "unexpected differences:\n{text}");
}

/// A server that answers one cversion wrong must fail the scenario by name, with a
/// reproduction. Rather than break the server, we break the golden transcript it is compared
/// with: the same diff either way.
#[test]
fn a_wrong_cversion_is_caught_and_names_the_scenario() {
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let text = read(&golden());
    let target = text
        .lines()
        .position(|l| l.contains("\"ch_log_to_queue\"") && l.contains("\"cversion\":2"))
        .expect("a line to doctor");
    let doctored: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == target { l.replacen("\"cversion\":2", "\"cversion\":3", 1) } else { l.to_string() })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("doctored.jsonl");
    std::fs::write(&bad, doctored.join("\n")).unwrap();
    let (out, text) = conform(&["--target", &tk.addr().to_string(), "--expect", bad.to_str().unwrap()]);
    assert!(!out.status.success(), "a doctored golden must fail:\n{text}");
    assert!(text.contains("FAIL                 ch_log_to_queue"), "{text}");
    assert!(text.contains("cversion: target 2 / reference 3") && text.contains("reproduction:"), "{text}");
}

#[test]
#[ignore = "re-records conformance/golden/zookeeper-3.8.jsonl from a live ZooKeeper"]
fn record_golden() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let (out, text) = conform(&["--target", &zk.addr().to_string(), "--record", golden().to_str().unwrap()]);
    assert!(out.status.success(), "{text}");
}
