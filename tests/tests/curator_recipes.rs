//! Apache Curator's recipes (Debian's libcurator-*-java 5.4) against each testkeeper flavor and
//! against Apache ZooKeeper 3.8: locks, a semaphore, leader latch, CuratorCache, queues,
//! barriers, TTL nodes and a session that expires on the server while its client is cut off
//! (tests/java/CuratorRecipes.java and CutProxy.java, compiled here with javac). ZooKeeper and the zookeeper
//! flavor must pass every recipe; keeper flavor must fail exactly where real Keeper does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use testkeeper_tests::env::{curator_installed, java, zookeeper_installed, CURATOR_RECIPES_JAR};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperProcess};

/// Every recipe the Java program runs, in its order.
const RECIPES: &[&str] = &[
    "lock",
    "semaphore",
    "leader-latch",
    "curator-cache",
    "queue",
    "simple-queue",
    "barrier",
    "double-barrier",
    "ttl-node",
    "session-expiry",
];

/// Recipes that fail against keeper flavor because real ClickHouse Keeper makes them fail, with
/// the difference (docs/flavors.md) that does it. Each must fail, so a change shows here.
const KEEPER_FAILS: &[(&str, &str)] = &[(
    "curator-cache",
    "Keeper's persistent-recursive events name the watched path, not the changed node, so \
     CuratorCache never learns of grandchildren (ClickHouse/ClickHouse#115475)",
)];

/// A whole run: ten recipes, a session expiry of up to Keeper's 10 s minimum timeout, and the
/// 30 s bound of the wait that is expected to fail in keeper flavor.
const RUN_BOUND: Duration = Duration::from_secs(600);

fn classpath(classes: &Path) -> String {
    // The recipes jar's manifest brings the framework, client, guava and ZooKeeper; slf4j-nop
    // keeps their logging quiet.
    format!(
        "{}:{CURATOR_RECIPES_JAR}:/usr/share/java/curator-framework.jar:/usr/share/java/slf4j-nop.jar",
        classes.display()
    )
}

fn compile(dir: &Path) -> PathBuf {
    let classes = dir.join("classes");
    testkeeper_tests::java::compile(&["CuratorRecipes.java", "CutProxy.java"], &classpath(&classes), &classes);
    classes
}

/// Runs every recipe against `connect`; returns recipe -> "PASS" or the failure line.
fn run(classes: &Path, label: &str, connect: &str) -> Vec<(String, String)> {
    let out = run_bounded(
        Command::new(java().expect("java")).args(["-cp", &classpath(classes), "CuratorRecipes", connect]),
        b"",
        RUN_BOUND,
    )
    .expect("run java");
    assert!(!out.timed_out(), "{label}: the recipes did not finish within {RUN_BOUND:?}:\n{}", out.combined());
    eprintln!("{label}:\n{}", out.stdout.trim_end());
    let results: Vec<(String, String)> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let (verdict, rest) = l.split_once(' ')?;
            let name = rest.split(':').next()?.to_string();
            matches!(verdict, "PASS" | "FAIL").then(|| (name, l.to_string()))
        })
        .collect();
    let names: Vec<&str> = results.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, RECIPES, "{label}: every recipe reports once\n{}", out.combined());
    results
}

fn failures(results: &[(String, String)]) -> Vec<&str> {
    results.iter().filter(|(_, l)| !l.starts_with("PASS")).map(|(n, _)| n.as_str()).collect()
}

#[test]
fn curator_recipes_on_zookeeper_and_both_flavors() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    require_external!("Apache Curator (libcurator-recipes-java) and javac", curator_installed());
    let dir = tempfile::tempdir().unwrap();
    let classes = compile(dir.path());
    let zk = ZooKeeperProcess::start();
    let tk_zk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let tk_keeper = TestkeeperProcess::start(&["--flavor", "keeper"]);

    let want = run(&classes, "ZooKeeper 3.8", &zk.connect_string());
    assert!(failures(&want).is_empty(), "Curator fails on ZooKeeper itself: {want:?}");
    let got = run(&classes, "testkeeper --flavor zookeeper", &tk_zk.connect_string());
    assert!(
        failures(&got).is_empty(),
        "zookeeper flavor: {:?}",
        got.iter().filter(|(_, l)| !l.starts_with("PASS")).collect::<Vec<_>>()
    );
    let keeper = run(&classes, "testkeeper --flavor keeper", &tk_keeper.connect_string());
    let expected: Vec<&str> = KEEPER_FAILS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        failures(&keeper),
        expected,
        "keeper flavor must fail exactly where real Keeper does ({KEEPER_FAILS:?}): {keeper:?}"
    );
}
