//! Debian's clickhouse-server 18.16 on testkeeper.
//!
//! Each test starts a ZooKeeper-protocol server, a logging proxy in front of
//! it, and a clickhouse-server in the foreground with its own config
//! (`tests/clickhouse/server18.xml`: data under a temp dir, free loopback
//! ports, a one-shard cluster pointing at itself), then runs through
//! `clickhouse-client`:
//!
//! * ReplicatedMergeTree (old syntax) INSERT, the identical INSERT again
//!   (deduplicated by its block hash: the count stays), another INSERT,
//!   OPTIMIZE FINAL (one part left), ALTER ADD COLUMN;
//! * CREATE TABLE / DROP TABLE ... ON CLUSTER through the distributed DDL
//!   queue;
//! * `SELECT ... FROM system.zookeeper WHERE path = ...`.
//!
//! Results are checked through ClickHouse and through the server's tree
//! (dumped with kazoo while ClickHouse runs, and again after it shut down
//! and its session closed). Apache ZooKeeper 3.8 runs the same workload as
//! the reference; the normalized znode trees must be equal.
//!
//! Prerequisites (scripts/install-test-deps.sh): Debian's clickhouse-server
//! and clickhouse-client, the venv with kazoo, Debian's ZooKeeper for the
//! reference. Missing ones skip, or fail under TESTKEEPER_REQUIRE_EXTERNAL=1.

#[path = "../clickhouse/common.rs"]
mod common;
#[path = "../clickhouse/server18.rs"]
mod server18;
#[path = "../clickhouse/server18_workload.rs"]
mod server18_workload;

use std::time::Instant;

use common::{secs, Target};
use server18_workload::{assert_matches_zookeeper, assert_workload, prereqs, run_workload};
use testkeeper_tests::env::{external_prereq, zookeeper_installed};

/// The testkeeper configurations ClickHouse runs against.
const VARIANTS: &[(&str, &[&str])] =
    &[("keeper", &["--flavor", "keeper"]), ("zookeeper-flavor", &["--flavor", "zookeeper"])];

/// One test runs everything, concurrently, so that the ZooKeeper reference
/// run is made once whatever the test runner (nextest runs each test in a
/// process of its own), and reports every failure, not just the first.
#[test]
fn clickhouse_server_on_testkeeper_and_zookeeper() {
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
                run_workload("zookeeper-3.8", &target)
            })
        });
        let handles: Vec<_> = VARIANTS
            .iter()
            .map(|(label, args)| {
                s.spawn(move || {
                    let target = Target::testkeeper(args);
                    run_workload(label, &target)
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
            Some(zk)
        }
        Some(Err(e)) => {
            failures.push(e); // the message names the run
            None
        }
        None => None,
    };
    for ((label, _), run) in VARIANTS.iter().zip(runs) {
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                failures.push(e); // the message names the run
                continue;
            }
        };
        failures.extend(common::check(|| assert_workload(&run)).err());
        if let Some(zk) = &zk {
            failures.extend(common::check(|| assert_matches_zookeeper(&run, zk)).err());
            // Informational: 18.16's background threads (cleanup, merge
            // selection) make some requests timing-dependent.
            let only_tk: Vec<_> = run.op_errors.difference(&zk.op_errors).collect();
            let only_zk: Vec<_> = zk.op_errors.difference(&run.op_errors).collect();
            if !only_tk.is_empty() || !only_zk.is_empty() {
                eprintln!(
                    "[{label}] (op, error) pairs differing from ZooKeeper's: \
                     only testkeeper {only_tk:?}, only ZooKeeper {only_zk:?}"
                );
            }
        }
    }
    eprintln!("clickhouse-server runs done in {}", secs(started));
    assert!(failures.is_empty(), "{} failure(s):\n\n{}", failures.len(), failures.join("\n\n"));
}
