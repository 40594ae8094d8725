//! kazoo's own test suite as a compatibility oracle.
//!
//! Runs kazoo's shipped tests (see tests/kazoo/run_kazoo_suite.py) against
//! real Apache ZooKeeper and against `testkeeper serve --flavor zookeeper`,
//! and fails on every test that passes on ZooKeeper but not on testkeeper.
//! Comparing against a live ZooKeeper run, rather than a stored list, keeps
//! the oracle honest about kazoo's own flaky or environment-bound tests.
//!
//! Result files: `target/tmp/kazoo-suite/<label>.{json,log}` (per-test
//! outcomes, and pytest's output with tracebacks).

use std::path::PathBuf;

use testkeeper_tests::env::{kazoo_venv_ready, testkeeper_bin, zookeeper_installed};
use testkeeper_tests::kazoo::{failure_excerpt, regressions, run_suite, SuiteRun};
use testkeeper_tests::{TestkeeperProcess, ZooKeeperProcess};

/// Fewer passes than this against real ZooKeeper means the harness broke
/// (e.g. a kazoo upgrade changed its internals), not that ZooKeeper did.
/// kazoo 2.11.0 passes all 472 it runs.
const MIN_BASELINE_PASSES: usize = 450;

/// Tests kazoo 2.11.0 runs here: its 493 minus the 21 that `run_kazoo_suite.py` excludes (they
/// stop servers or need SASL, TLS or a quorum). Fewer means a test dependency is missing
/// (gevent and eventlet: without them 168 handler tests skip), so CI would test less than it
/// claims.
const KAZOO_TESTS_RUN: usize = 472;

/// How many regressions get their pytest traceback quoted in the failure.
const MAX_EXCERPTS: usize = 10;

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kazoo-suite")
}

fn check_prereqs() -> bool {
    testkeeper_tests::env::external_prereq("Debian ZooKeeper (zookeeper package + java)", zookeeper_installed())
        && testkeeper_tests::env::external_prereq(
            "Python venv with kazoo, pytest, pytest-timeout, objgraph, gevent, eventlet",
            kazoo_venv_ready(),
        )
}

fn assert_healthy_baseline(zk: &SuiteRun) {
    let ran = zk.outcomes.values().filter(|o| !["skipped", "excluded", "not run"].contains(&o.as_str())).count();
    eprintln!("kazoo suite on {}: {ran} tests run, {} skipped", zk.label, zk.count("skipped"));
    assert!(
        ran == KAZOO_TESTS_RUN && zk.count("skipped") == 0,
        "kazoo ran {ran} tests with {} skipped against {}; expected all {KAZOO_TESTS_RUN} to run \
         (run scripts/install-test-deps.sh: gevent and eventlet). See {}",
        zk.count("skipped"),
        zk.label,
        zk.log.display()
    );
    let passed = zk.count("passed");
    assert!(
        passed >= MIN_BASELINE_PASSES && !zk.killed,
        "kazoo suite against real ZooKeeper looks broken ({}); expected >= {MIN_BASELINE_PASSES} passes. \
         See {}",
        zk.summary(),
        zk.log.display()
    );
}

/// The baseline alone: proves the runner and ZooKeeper setup work, and keeps
/// doing so even while testkeeper itself is failing.
/// kazoo's suite has timing-sensitive tests (sleeps, short session timeouts) that can fail on a
/// loaded 2-core machine against any server. A test that fails here is run once more, alone;
/// only one that fails again counts. The first failure is still printed.
fn still_failing(label: &str, hosts: &str, ids: &[String]) -> Vec<String> {
    if ids.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = ids.iter().map(|id| id.rsplit("::").next().unwrap_or(id)).collect();
    let filter = names.join(" or ");
    eprintln!("re-running {} kazoo test(s) once: {filter}", ids.len());
    let rerun = match run_suite(&format!("{label}-rerun"), hosts, &out_dir(), Some(&filter)) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    ids.iter().filter(|id| rerun.outcomes.get(id.as_str()).is_none_or(|o| o != "passed")).cloned().collect()
}

/// kazoo tests that fail against `--flavor keeper` because of a documented Keeper difference
/// (docs/flavors.md), each with the difference that explains it.
const KEEPER_EXPECTED_FAILURES: &[(&str, &str)] = &[
    ("TestClient::test_create_null_data", "Keeper reads null data back as empty"),
    ("TestClient::test_set_null_data", "Keeper reads null data back as empty"),
    (
        "TestClientTransitions::test_connection_and_disconnection",
        "Keeper closes the socket instead of answering closeSession",
    ),
    (
        "TestClient::test_create_invalid_path",
        "Keeper refuses only an empty node name: /b\\x1e is created (KeeperStorage create preprocess)",
    ),
];

/// kazoo runs `TestClient` again under its gevent and eventlet handlers, as subclasses.
const HANDLER_SUBCLASSES: &[(&str, &str)] =
    &[("TestClient::", "TestGeventClient::"), ("TestClient::", "TestEventletClient::")];

/// Whether test `id` is `test` (`Class::name`) itself or its re-run under another handler.
fn is_rerun_of(id: &str, test: &str) -> bool {
    id.ends_with(test)
        || HANDLER_SUBCLASSES
            .iter()
            .any(|(base, sub)| test.strip_prefix(base).is_some_and(|name| id.ends_with(&format!("{sub}{name}"))))
}

/// Keeper flavor: every kazoo failure must be one explained by a documented Keeper difference.
#[test]
fn handler_reruns_match_their_base_test() {
    assert!(is_rerun_of("test_client.py::TestClient::test_set_null_data", "TestClient::test_set_null_data"));
    assert!(is_rerun_of(
        "test_gevent_handler.py::TestGeventClient::test_set_null_data",
        "TestClient::test_set_null_data"
    ));
    assert!(!is_rerun_of("test_gevent_handler.py::TestGeventClient::test_create", "TestClient::test_set_null_data"));
    assert!(!is_rerun_of("test_x.py::TestOther::test_set_null_data", "TestClient::test_set_null_data"));
}

#[test]
fn kazoo_suite_keeper_flavor_fails_only_on_documented_differences() {
    if !check_prereqs() {
        return;
    }
    // kazoo's suite opens more than 60 connections at once: no per-IP limit, as the ZooKeeper
    // it runs against has maxClientCnxns=0 (tests/src/zookeeper.rs).
    let tk_server = TestkeeperProcess::start(&["--flavor", "keeper", "--max-connections-per-ip", "0"]);
    let tk = run_suite("testkeeper-keeper", &tk_server.connect_string(), &out_dir(), None)
        .unwrap_or_else(|e| panic!("{e}\ntestkeeper log tail:\n{}", tk_server.log_tail(30)));
    eprintln!("{}", tk.summary());
    assert_healthy_baseline(&tk);
    let unexplained: Vec<String> = ["failed", "error", "timeout"]
        .iter()
        .flat_map(|o| tk.with_outcome(o))
        .filter(|id| !KEEPER_EXPECTED_FAILURES.iter().any(|(t, _)| is_rerun_of(id, t)))
        .map(str::to_string)
        .collect();
    let unexplained = still_failing("testkeeper-keeper", &tk_server.connect_string(), &unexplained);
    assert!(
        unexplained.is_empty(),
        "kazoo failures in keeper flavor not explained by docs/flavors.md: {unexplained:?}"
    );
}

#[test]
fn kazoo_suite_testkeeper_matches_zookeeper() {
    if !check_prereqs() {
        return;
    }
    // Our own binary is not an external prerequisite: missing means broken.
    let bin = testkeeper_bin();
    assert!(
        bin.is_file(),
        "testkeeper binary not found at {}: build it with `cargo build -p testkeeper` \
         (`make test` does) or set TESTKEEPER_BIN",
        bin.display()
    );
    let zk_server = ZooKeeperProcess::start();
    // kazoo's suite opens more than 60 connections at once: no per-IP limit, as the ZooKeeper
    // it runs against has maxClientCnxns=0 (tests/src/zookeeper.rs).
    let tk_server = TestkeeperProcess::start(&["--flavor", "zookeeper", "--max-connections-per-ip", "0"]);
    let dir = out_dir();

    let (zk, tk) = std::thread::scope(|s| {
        let zk = s.spawn(|| run_suite("zookeeper", &zk_server.connect_string(), &dir, None));
        let tk = s.spawn(|| run_suite("testkeeper-zookeeper", &tk_server.connect_string(), &dir, None));
        (zk.join().expect("zookeeper suite thread"), tk.join().expect("testkeeper suite thread"))
    });
    let zk = zk.unwrap_or_else(|e| panic!("{e}"));
    let tk = tk.unwrap_or_else(|e| panic!("{e}\ntestkeeper log tail:\n{}", tk_server.log_tail(30)));
    eprintln!("{}\n{}", zk.summary(), tk.summary());
    assert_healthy_baseline(&zk);

    let fixed: Vec<&str> = tk
        .with_outcome("passed")
        .into_iter()
        .filter(|id| zk.outcomes.get(*id).is_some_and(|o| o != "passed"))
        .collect();
    if !fixed.is_empty() {
        eprintln!("passing on testkeeper but not on ZooKeeper (informational): {fixed:?}");
    }

    let mut regressed = regressions(&zk, &tk);
    if !regressed.is_empty() {
        eprintln!("first run: {} regression(s): {regressed:?}", regressed.len());
        let ids: Vec<String> = regressed.iter().map(|(id, _)| id.clone()).collect();
        let again = still_failing("testkeeper-zookeeper", &tk_server.connect_string(), &ids);
        regressed.retain(|(id, _)| again.contains(id));
    }
    if !regressed.is_empty() {
        let mut report = format!(
            "{} kazoo test(s) pass against ZooKeeper but not against testkeeper --flavor zookeeper:\n",
            regressed.len()
        );
        for (id, outcome) in &regressed {
            report.push_str(&format!("  {id}: {outcome}\n"));
        }
        // The first few failures' pytest output, so the cause is right here.
        for (id, _) in regressed.iter().take(MAX_EXCERPTS) {
            if let Some(excerpt) = failure_excerpt(&tk, id, 12) {
                report.push_str(&format!("--- {id}\n{excerpt}\n"));
            }
        }
        report.push_str(&format!(
            "full pytest output: {}\n\
             rerun a subset: TESTKEEPER_KAZOO_FILTER='<pytest -k expr>' \
             cargo nextest run -p testkeeper-tests --test kazoo_suite\n\
             testkeeper log tail:\n{}",
            tk.log.display(),
            tk_server.log_tail(10)
        ));
        panic!("{report}");
    }
}
