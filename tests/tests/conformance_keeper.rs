//! The Keeper-only scenarios (`conformance/scenarios/keeper.txt`: createIfNotExists,
//! checkNotExists, tryRemove, removeRecursive, filteredList, checkStat, listRecursive) run only
//! when both sides are Keeper. No real ClickHouse Keeper runs here (see conformance_docker.rs
//! for one in a container), so two keeper-flavor testkeepers are compared: every scenario runs
//! on both, nothing is skipped for the flavor, and the transcripts agree (the runs are
//! deterministic and clean up after themselves on a Keeper-flavored server too).

use std::process::Command;

use testkeeper_tests::{testkeeper_bin, TestkeeperProcess};

#[test]
fn keeper_only_scenarios_run_keeper_against_keeper() {
    let (a, b) = (TestkeeperProcess::start(&["--flavor", "keeper"]), TestkeeperProcess::start(&["--flavor", "keeper"]));
    let out = Command::new(testkeeper_bin())
        .args([
            "conform",
            "--target",
            &a.addr().to_string(),
            "--reference",
            &b.addr().to_string(),
            "--filter",
            "keeper_",
        ])
        .output()
        .expect("run testkeeper conform");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    let passed = text.lines().filter(|l| l.starts_with("pass ") && l.contains(" keeper_")).count();
    assert!(passed >= 9, "every Keeper-only scenario runs when both sides are Keeper ({passed} passed):\n{text}");
    assert!(!text.contains("uses Keeper-only ops"), "{text}");
}
