//! `testkeeper sim` as CI runs it: a sweep of every workload under every nemesis (a fixed
//! budget of seeds, not of time; `TESTKEEPER_SIM_SEEDS=N` for a longer hunt), and every
//! deliberately broken mode caught at the seed docs/sim.md names, which, the runs being exact
//! replays, is the same seed on every machine.

use testkeeper_chaos::config::{parse_nemeses, RunConfig, TargetSpec, Workload};
use testkeeper_chaos::sim::sweep::{sweep, Outcome};
use testkeeper_server::broken::Broken;
use testkeeper_server::core::flavor::Flavor;

/// Seeds per workload in CI: 8 (1,000 ops each), or `TESTKEEPER_SIM_SEEDS`.
fn seeds_per_workload() -> u64 {
    std::env::var("TESTKEEPER_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8)
}

#[test]
fn every_workload_passes_a_sweep_under_every_nemesis() {
    let n = seeds_per_workload();
    let mut failed = Vec::new();
    for w in Workload::ALL {
        let cfg = RunConfig::new(w, 0);
        let mut cfg = cfg;
        cfg.ops = 1000;
        let report = sweep(&cfg, 1000..1000 + n, None, 2, &|_, _| {});
        eprint!("{w}: {}", report.text());
        assert_eq!(report.results.len() as u64, n);
        failed.extend(report.results.iter().filter(|r| r.outcome != Outcome::Pass).map(|r| r.replay.clone()));
    }
    assert!(failed.is_empty(), "seeds that did not pass (replay each):\n{}", failed.join("\n"));
}

#[test]
fn five_nodes_and_the_zookeeper_flavor_pass_a_few_seeds() {
    let mut failed = Vec::new();
    for (nodes, flavor) in [(5, Flavor::Keeper), (3, Flavor::Zookeeper)] {
        let mut cfg = RunConfig::new(Workload::Register, 0);
        cfg.target = TargetSpec::Embedded { nodes };
        cfg.flavor = flavor;
        let report = sweep(&cfg, 0..3, None, 2, &|_, _| {});
        eprint!("{nodes} nodes, {flavor}: {}", report.text());
        failed.extend(report.results.iter().filter(|r| r.outcome != Outcome::Pass).map(|r| r.replay.clone()));
    }
    assert!(failed.is_empty(), "seeds that did not pass (replay each):\n{}", failed.join("\n"));
}

/// Each broken mode, its workload and nemeses, and the first seed (from 0) that catches it.
/// docs/sim.md lists the same table.
const CAUGHT: [(Broken, Workload, &str, u64); 4] = [
    (Broken::StaleReadAfterSync, Workload::Register, "all", 1),
    (Broken::ForgetAckedOnLeaderChange, Workload::Set, "all", 1),
    (Broken::AckBeforeDurable, Workload::Set, "all", 0),
    (Broken::PartialMulti, Workload::Counter, "none", 0),
];

#[test]
fn every_broken_mode_is_caught_at_its_documented_seed() {
    for (mode, workload, nemeses, first) in CAUGHT {
        let mut cfg = RunConfig::new(workload, 0);
        cfg.ops = 500;
        cfg.broken = Some(mode);
        cfg.nemeses = parse_nemeses(nemeses).unwrap();
        let report = sweep(&cfg, 0..first + 1, None, 2, &|_, _| {});
        let outcomes: Vec<(u64, Outcome)> = report.results.iter().map(|r| (r.seed, r.outcome)).collect();
        let caught_at = outcomes.iter().find(|(_, o)| *o == Outcome::Violation).map(|(s, _)| *s);
        assert_eq!(caught_at, Some(first), "{mode}: {outcomes:?}\n{}", report.text());
        let last = report.results.last().unwrap();
        assert!(last.replay.starts_with("testkeeper sim ") && last.replay.contains(&format!("--broken {mode}")));
    }
}
