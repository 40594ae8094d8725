//! `testkeeper chaos` against the embedded 3-node cluster, every nemesis: a few seeds per
//! workload must pass (more with `TESTKEEPER_CHAOS_SEEDS=N`), and a deliberately broken
//! cluster must be caught, so the checkers can fail.

use std::time::Duration;

use testkeeper_chaos::check::Verdict;
use testkeeper_chaos::config::{parse_nemeses, RunConfig, Workload};
use testkeeper_chaos::report::Report;
use testkeeper_server::broken::Broken;

/// Seeds per workload: 2 in CI, `TESTKEEPER_CHAOS_SEEDS` for a longer hunt.
fn seeds() -> Vec<u64> {
    let n = std::env::var("TESTKEEPER_CHAOS_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2u64);
    let base = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1u64);
    (base..base + n).collect()
}

/// A CI-sized run: 300 ops over at most 3 s.
fn small(workload: Workload, seed: u64) -> RunConfig {
    let mut c = RunConfig::new(workload, seed);
    c.ops = 300;
    c.duration = Duration::from_secs(3);
    c
}

async fn run(cfg: &RunConfig) -> Report {
    let r = testkeeper_chaos::run::run(cfg, &|line| eprintln!("{line}")).await.expect("the run completes");
    eprint!("{}", r.text());
    r
}

async fn passes(workload: Workload) {
    for seed in seeds() {
        let r = run(&small(workload, seed)).await;
        assert!(r.passed(), "{workload} seed {seed} did not pass; replay: {}\n{}", r.replay, r.text());
        assert!(!r.history.nemesis.is_empty(), "seed {seed}: the nemesis did nothing");
        // Lock contenders wait their turn: far fewer of their ops complete.
        let (ok, _, _) = r.history.counts();
        let least = if workload == Workload::Lock { 5 } else { 100 };
        assert!(ok > least, "seed {seed}: only {ok} ops succeeded");
        let rec = r.history.cluster.as_ref().expect("the embedded cluster's record");
        assert!(!rec.applied.is_empty() && rec.final_digests.len() == 3, "{:?}", rec.final_digests);
        let names: Vec<&str> = r.results.iter().map(|c| c.checker.as_str()).collect();
        for wb in ["committed-once", "replica-digests", "one-leader-per-term", "session"] {
            assert!(names.contains(&wb), "{names:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_is_linearizable_under_every_nemesis() {
    passes(Workload::Register).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_keeps_every_acknowledged_add_under_every_nemesis() {
    passes(Workload::Set).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_delivers_every_acknowledged_enqueue_once_under_every_nemesis() {
    passes(Workload::Queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_unique_under_every_nemesis() {
    passes(Workload::Ids).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counter_counts_every_acknowledged_add_under_every_nemesis() {
    passes(Workload::Counter).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_has_one_holder_at_a_time_under_every_nemesis() {
    passes(Workload::Lock).await;
}

/// A broken mode is caught within a few seeds (whether one seed's timing exposes it is not
/// certain; three seeds in a row that do not would be a checker that cannot fail).
async fn caught(broken: Broken, workload: Workload, nemeses: &str) {
    let mut tried = Vec::new();
    for seed in 1..=3 {
        let mut cfg = small(workload, seed);
        // One register: every read competes with every write.
        cfg.keys = 1;
        cfg.broken = Some(broken);
        cfg.nemeses = parse_nemeses(nemeses).unwrap();
        let r = run(&cfg).await;
        if r.violated() {
            let bad = r.results.iter().find(|c| c.verdict == Verdict::Fail).unwrap();
            let v = &bad.violations[0];
            assert!(!v.ops.is_empty() && v.start_ns <= v.end_ns, "a violation names its window: {v:?}");
            assert!(r.text().contains("window"), "{}", r.text());
            return;
        }
        tried.push(seed);
    }
    panic!("{broken} was not caught by the {workload} checkers with seeds {tried:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_read_after_sync_is_caught() {
    caught(Broken::StaleReadAfterSync, Workload::Register, "pause").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_acknowledged_writes_on_leader_change_is_caught() {
    caught(Broken::ForgetAckedOnLeaderChange, Workload::Set, "kill-leader,partition-isolate,pause").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledging_before_the_disk_has_it_is_caught_by_a_power_cut() {
    caught(Broken::AckBeforeDurable, Workload::Set, "crash-all").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_applied_in_part_is_caught() {
    caught(Broken::PartialMulti, Workload::Counter, "none").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_replays_from_the_seed() {
    let mut a = small(Workload::Register, 11);
    // The run is bounded by its duration, not by an op count that one run may use up before
    // the last window starts: then both runs reach every window of the schedule.
    a.ops = 1_000_000;
    a.duration = Duration::from_millis(1500);
    let (x, y) = (run(&a).await, run(&a).await);
    assert_eq!(x.schedule, y.schedule);
    assert!(!x.schedule.is_empty());
    let kinds = |r: &Report| r.history.nemesis.iter().map(|e| e.kind.clone()).collect::<Vec<_>>();
    assert_eq!(kinds(&x), kinds(&y), "the same windows ran");
}
