//! ClickHouse 26.x (chdb, from PyPI, in the test venv) on testkeeper.
//!
//! `tests/clickhouse/chdb_workload.py` runs KeeperMap CREATE / INSERT /
//! SELECT / ALTER UPDATE / ALTER DELETE / TRUNCATE / DROP, a keeper-stored
//! UDF and a keeper-stored named collection in one process ("write"), then
//! reads them back and drops them from a second process ("verify"). Each run
//! is checked through ClickHouse (row counts, values, the expected
//! NODEEXISTS) and through the server (the znodes left behind, dumped with
//! kazoo, and `mntr`'s node count). A logging proxy in front of the server
//! records which opcodes ClickHouse used, so the feature-flag runs can show
//! that ClickHouse really switched to the Keeper-only ops they advertise.
//!
//! The same workload against Apache ZooKeeper 3.8 is the reference: its
//! normalized znode paths must match testkeeper's.
//!
//! Prerequisites (scripts/install-test-deps.sh): the venv with kazoo and
//! chdb; Debian's ZooKeeper for the comparison. Missing ones skip, or fail
//! under TESTKEEPER_REQUIRE_EXTERNAL=1.

#[path = "../clickhouse/chdb_run.rs"]
mod chdb_run;
#[path = "../clickhouse/common.rs"]
mod common;

use std::time::Instant;

use chdb_run::{assert_matches_zookeeper, assert_workload, check_plain_zookeeper_ops, prereqs, run_chdb, VARIANTS};
use common::{secs, Target};
use testkeeper_tests::env::{external_prereq, zookeeper_installed};

/// One test runs everything, concurrently, so that the ZooKeeper reference
/// run is made once whatever the test runner (nextest runs each test in a
/// process of its own), and reports every failure, not just the first.
#[test]
fn chdb_on_testkeeper_and_zookeeper() {
    if !prereqs() {
        return;
    }
    common::assert_testkeeper_built();
    let with_zk =
        external_prereq("Debian ZooKeeper (zookeeper package + java) for the reference run", zookeeper_installed());
    let started = Instant::now();
    let (zk, runs) = std::thread::scope(|s| {
        let zk = with_zk.then(|| {
            s.spawn(|| {
                let target = Target::zookeeper();
                run_chdb("zookeeper-3.8", &target)
            })
        });
        let handles: Vec<_> = VARIANTS
            .iter()
            .map(|(label, args, _)| {
                s.spawn(move || {
                    let target = Target::testkeeper(args);
                    run_chdb(label, &target)
                })
            })
            .collect();
        let zk = zk.map(|h| h.join().map_err(common::panic_message));
        let runs: Vec<_> = handles.into_iter().map(|h| h.join().map_err(common::panic_message)).collect();
        (zk, runs)
    });

    let mut failures = Vec::new();
    let zk = match zk {
        Some(Ok(zk)) => {
            failures.extend(common::check(|| assert_workload(&zk)).err());
            failures.extend(common::check(|| check_plain_zookeeper_ops(&zk)).err());
            Some(zk)
        }
        Some(Err(e)) => {
            failures.push(e); // the message names the run
            None
        }
        None => None,
    };
    for ((label, _, variant_check), run) in VARIANTS.iter().zip(runs) {
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                failures.push(e); // the message names the run
                continue;
            }
        };
        failures.extend(common::check(|| assert_workload(&run)).err());
        failures.extend(common::check(|| variant_check(&run, zk.as_ref())).err());
        // `mntr` agrees with what a client sees.
        failures.extend(
            common::check(|| {
                let (mntr, dumped) = run.znode_counts;
                assert_eq!(mntr, Some(dumped), "[{label}] mntr zk_znode_count vs dumped tree");
            })
            .err(),
        );
        if let Some(zk) = &zk {
            failures.extend(common::check(|| assert_matches_zookeeper(&run, zk)).err());
        }
    }
    eprintln!("chdb runs done in {}", secs(started));
    assert!(failures.is_empty(), "{} failure(s):\n\n{}", failures.len(), failures.join("\n\n"));
}
