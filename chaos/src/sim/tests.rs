//! The simulation replays (one seed, one trace), and the seeds that found bugs stay fixed.

use super::*;
use crate::config::Workload;

fn cfg(workload: Workload, seed: u64, ops: usize) -> RunConfig {
    let mut c = RunConfig::new(workload, seed);
    c.ops = ops;
    c
}

#[test]
fn a_seed_replays_byte_for_byte_and_another_seed_does_not() {
    const { assert!(REPLAYS, "built without --cfg tokio_unstable (.cargo/config.toml): the runtime is not seeded") };
    let a = run_seed(&cfg(Workload::Register, 7, 300)).unwrap();
    let b = run_seed(&cfg(Workload::Register, 7, 300)).unwrap();
    let c = run_seed(&cfg(Workload::Register, 8, 300)).unwrap();
    assert!(a.report.passed(), "{}", a.report.text());
    assert_eq!(a.trace, b.trace, "seed 7 twice");
    assert_ne!(a.trace, c.trace, "seeds 7 and 8");
    assert!(a.simulated() > a.wall, "simulated {:?} in {:?}", a.simulated(), a.wall);
}

/// A restarted node counted its proposals' origins from 1 again, so an entry of its previous
/// life met a waiter of the new one: a handshake got a create's outcome, and the node stopped
/// on the broken invariant (engine/commit.rs, `new_origin`).
#[test]
fn regression_lock_seed_6_a_restarted_node_reused_origins() {
    let run = run_seed(&cfg(Workload::Lock, 6, 400)).unwrap();
    assert!(run.report.passed(), "{}", run.report.text());
}

/// Determinism over every workload, a few seeds each (run by hand: `cargo test -p
/// testkeeper-chaos sim::tests::every_workload -- --ignored`; `testkeeper sim --seeds` sweeps
/// more, comparing nothing but verdicts).
#[test]
#[ignore]
fn every_workload_replays() {
    let mut differ = Vec::new();
    for w in [Workload::Register, Workload::Set, Workload::Ids, Workload::Counter, Workload::Queue, Workload::Lock] {
        for seed in 0..8 {
            let (a, b) = (run_seed(&cfg(w, seed, 400)).unwrap(), run_seed(&cfg(w, seed, 400)).unwrap());
            assert!(a.report.passed(), "{}", a.report.text());
            if a.trace != b.trace {
                differ.push(format!("{w} seed {seed}"));
            }
        }
    }
    assert!(differ.is_empty(), "not replayed: {differ:?}");
}

fn with_nemeses(workload: Workload, seed: u64, nemeses: &str) -> RunConfig {
    let mut c = cfg(workload, seed, 1000);
    c.nemeses = crate::config::parse_nemeses(nemeses).unwrap();
    c
}

/// A forwarded proposal delivered twice was proposed twice: an acknowledged write committed
/// twice, and the register went back in time (cluster/driver/dedup.rs).
#[test]
fn regression_lossy_links_seed_0_a_duplicated_forward_committed_twice() {
    let run = run_seed(&with_nemeses(Workload::Register, 0, "lossy-links")).unwrap();
    assert!(run.report.passed(), "{}", run.report.text());
}

/// A flipped length byte in the middle of a node's log made the rest look like one torn
/// record: recovery cut it off (writing to the disk it then refused) and raft-rs panicked on
/// the commit index past the log. Now every corruption is refused, the disk left as it was.
#[test]
fn regression_corrupt_disk_seed_3_every_corruption_is_refused_and_repairable() {
    let run = run_seed(&with_nemeses(Workload::Register, 3, "corrupt-disk")).unwrap();
    assert!(run.report.passed(), "{}", run.report.text());
    let events: Vec<&str> = run.report.history.nemesis.iter().map(|e| e.detail.as_str()).collect();
    assert!(events.len() >= 5, "{events:?}");
    assert!(events.iter().all(|e| e.contains("start refused") || e.contains("too short")), "{events:?}");
}

/// A bit flipped in a record's length in the middle of the log made it reach past the end:
/// recovery took it for a torn last record and dropped it and every record after it, entries
/// the node had acknowledged, and raft-rs panicked when the leader's commit index reached
/// them (log/record.rs, `whole_record_follows`).
#[test]
fn regression_zookeeper_seed_375_a_damaged_length_looked_like_a_torn_write() {
    let mut c = cfg(Workload::Register, 375, 1000);
    c.flavor = testkeeper_server::core::flavor::Flavor::Zookeeper;
    let run = run_seed(&c).unwrap();
    assert!(run.report.passed(), "{}", run.report.text());
    assert!(run.report.results.iter().any(|r| r.checker == "corruption-detected"));
}

/// A full disk stops no node: it refuses writes and takes no entries until emptied, then
/// catches up, and nothing acknowledged is lost.
#[test]
fn a_full_disk_stops_no_node_and_it_catches_up_when_emptied() {
    let run = run_seed(&with_nemeses(Workload::Set, 2, "disk-full")).unwrap();
    assert!(run.report.passed(), "{}", run.report.text());
    let events: Vec<&str> = run.report.history.nemesis.iter().map(|e| e.detail.as_str()).collect();
    assert!(events.len() >= 5 && events.iter().all(|e| e.ends_with("disk is full")), "{events:?}");
}
