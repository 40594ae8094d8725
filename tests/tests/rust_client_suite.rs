//! kezhuw/zookeeper-client-rust's own integration suite (the crate zookeeper-client 0.11.2)
//! against `testkeeper --flavor zookeeper`, one server per test, through
//! `scripts/rust-client-suite.sh` (which swaps the suite's Docker harness for testkeeper and
//! leaves every test body alone).
//!
//! With `--zookeeper-version 3.9` every test passes except those that need an ensemble or SASL
//! (the script's SKIPPED list, docs/conformance.md); the old-server test (3.3, 3.4) runs against
//! 3.8.0, which answers what it asks as those do. With 3.8.0 exactly the
//! tests of 3.9's client-visible changes fail: the suite can fail, and the version switch is
//! what makes it pass.
//!
//! One test, `test_watcher_remove_no_watcher`, races its own watch notification against its
//! remove request: on a server that answers in a tenth of a millisecond the notification can
//! win, and the client then answers the remove itself without sending it (the server log shows
//! every request processed in order). A failed test is run again, up to twice, and is named.
//!
//! Every run of the suite has a time limit (`RUN_TIMEOUT_S`): a test that waits forever (for a
//! watch event, say) is stopped, named from libtest's "has been running for over 60 seconds"
//! line, and counted as failed, so it is run again like any other failure and, if it hangs
//! each time, fails this test by name instead of holding CI until the job's limit.

use std::collections::BTreeSet;
use std::process::Command;

use testkeeper_tests::env::{repo_root, testkeeper_bin};

/// The tests that fail on ZooKeeper 3.8.0 and pass on 3.9 (ZOOKEEPER-4026, ZOOKEEPER-4655,
/// ZOOKEEPER-4466; docs/flavors.md).
const FAIL_ON_3_8_0: &[&str] = &[
    "test_check_writer",
    "test_lock_curator::case_1_chroot_x",
    "test_lock_curator::case_2_chroot_x_y",
    "test_lock_custom::case_1_chroot_x",
    "test_lock_custom::case_2_chroot_x_y",
    "test_lock_shared::case_1_chroot_x",
    "test_lock_shared::case_2_chroot_x_y",
    "test_multi::case_1_no_chroot",
    "test_multi::case_2_chroot_x",
    "test_multi::case_3_chroot_x_y",
    "test_watcher_coexist_on_same_path",
];

/// How long one run of the suite may take once it is built. It takes about 26 s on two cores
/// (its tests sleep through session timeouts); libtest names a test still running after 60 s,
/// so a test that starts to hang late in a slow run is named too.
const RUN_TIMEOUT_S: u32 = 240;

/// What one run of the suite printed: the tests that passed, failed, or were still running
/// when the run's time limit stopped it.
#[derive(Debug, Default)]
struct Outcome {
    passed: BTreeSet<String>,
    failed: BTreeSet<String>,
    hung: BTreeSet<String>,
}

impl Outcome {
    /// Reads libtest's lines: "test NAME ... ok", "test NAME ... FAILED", and "test NAME has
    /// been running for over 60 seconds" (hung only if it never finished).
    fn parse(stdout: &str) -> Self {
        let mut out = Outcome::default();
        let mut slow = BTreeSet::new();
        for line in stdout.lines() {
            let Some(rest) = line.strip_prefix("test ") else { continue };
            if let Some(name) = rest.strip_suffix(" ... ok") {
                out.passed.insert(name.to_string());
            } else if let Some(name) = rest.strip_suffix(" ... FAILED") {
                out.failed.insert(name.to_string());
            } else if let Some(name) = rest.strip_suffix(" has been running for over 60 seconds") {
                slow.insert(name.to_string());
            }
        }
        out.hung = slow.into_iter().filter(|t| !out.passed.contains(t) && !out.failed.contains(t)).collect();
        out
    }
}

/// Runs the suite (or the tests `exact` names) with its time limit.
fn run(version: &str, exact: &[String]) -> Outcome {
    let mut cmd = Command::new(repo_root().join("scripts/rust-client-suite.sh"));
    cmd.args(["--zookeeper-version", version, "--run-timeout", &RUN_TIMEOUT_S.to_string()]);
    cmd.env("TESTKEEPER_BIN", testkeeper_bin());
    if !exact.is_empty() {
        cmd.arg("--exact").args(exact);
    }
    let out = cmd.output().expect("run scripts/rust-client-suite.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let outcome = Outcome::parse(&stdout);
    let timed_out = out.status.code() == Some(124);
    assert!(
        !timed_out || !outcome.hung.is_empty(),
        "the suite passed its {RUN_TIMEOUT_S} s limit with no test named as running:\n{stdout}\n{stderr}"
    );
    assert!(
        !outcome.passed.is_empty() || !outcome.failed.is_empty() || !outcome.hung.is_empty(),
        "the suite ran no test (exit {:?}):\n{stdout}\n{stderr}",
        out.status
    );
    if !outcome.hung.is_empty() {
        eprintln!("{version}: stopped after {RUN_TIMEOUT_S} s, still running: {:?}", outcome.hung);
    }
    outcome
}

/// The suite with failed tests run again up to twice: (passed, failed at the end, passed only
/// when run again).
/// A test that hung counts as failed: it is run again like one.
fn run_with_reruns(version: &str) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let first = run(version, &[]);
    let (mut passed, mut failed) = (first.passed, &first.failed | &first.hung);
    let mut flaky = BTreeSet::new();
    for _ in 0..2 {
        if failed.is_empty() {
            break;
        }
        let again: Vec<String> = failed.iter().cloned().collect();
        let next = run(version, &again);
        flaky.extend(next.passed.iter().cloned());
        passed.extend(next.passed);
        failed = &next.failed | &next.hung;
    }
    (passed, failed, flaky)
}

#[test]
fn the_rust_clients_suite_passes_on_3_9_and_fails_on_3_8_0_where_3_9_differs() {
    let (passed, failed, flaky) = run_with_reruns("3.9");
    eprintln!("3.9: {} passed, failed: {failed:?}, passed only when run again: {flaky:?}", passed.len());
    assert!(failed.is_empty(), "on --zookeeper-version 3.9 these fail: {failed:?}");
    assert!(passed.len() >= 48, "only {} tests ran: {passed:?}", passed.len());

    let (_, failed, _) = run_with_reruns("3.8.0");
    let expected: BTreeSet<String> = FAIL_ON_3_8_0.iter().map(|s| s.to_string()).collect();
    assert_eq!(failed, expected, "on --zookeeper-version 3.8.0 exactly the tests of 3.9's changes fail");
}

#[test]
fn a_test_still_running_when_the_limit_stops_the_run_counts_as_hung() {
    let stdout = "running 3 tests\ntest a ... ok\ntest b has been running for over 60 seconds\n\
                  test c has been running for over 60 seconds\ntest c ... FAILED\n";
    let out = Outcome::parse(stdout);
    assert_eq!(out.passed, BTreeSet::from(["a".to_string()]));
    assert_eq!(out.failed, BTreeSet::from(["c".to_string()]));
    assert_eq!(out.hung, BTreeSet::from(["b".to_string()]));
}
