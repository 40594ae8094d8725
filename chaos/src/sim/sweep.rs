//! Sweeps: many seeds of one simulated run, on every core (`--jobs`), and split across
//! machines by seed (`--shard K/N` takes every N-th seed of the range from the K-th on), so a
//! CI matrix of N machines covers the range once. Each seed runs on a thread of its own; the
//! results come back in seed order, whatever order the threads finished in, so a report is
//! the same for the same range on any machine.

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{replay_command, run_seed, SimError, SimRun};
use crate::check::Verdict;
use crate::config::RunConfig;
use crate::report::xml;

/// One machine's part of a range: the `index`-th (1-based) of `count` shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// A `--shard` that is not `K/N` with 1 <= K <= N (the text as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardError(pub String);

impl std::fmt::Display for ShardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard '{}' is not K/N with 1 <= K <= N (e.g. 3/8)", self.0)
    }
}

impl std::error::Error for ShardError {}

/// A `--seeds` that is not `A..B` with A < B, or one seed (the text as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedsError(pub String);

impl std::fmt::Display for SeedsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seeds '{}' is not A..B (B excluded, A < B) or one seed", self.0)
    }
}

impl std::error::Error for SeedsError {}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    /// `K/N` with 1 <= K <= N.
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Parses a seed range `A..B` (B excluded) or a single seed `A`.
///
/// # Errors
/// Not numbers, or an empty range.
pub fn parse_seeds(s: &str) -> Result<Range<u64>, SeedsError> {
    let bad = || SeedsError(s.to_string());
    let range = match s.split_once("..") {
        Some((a, b)) => a.trim().parse().map_err(|_| bad())?..b.trim().parse().map_err(|_| bad())?,
        None => {
            let a: u64 = s.trim().parse().map_err(|_| bad())?;
            a..a.checked_add(1).ok_or_else(bad)?
        }
    };
    if range.is_empty() {
        return Err(bad());
    }
    Ok(range)
}

/// The seeds of `range` that `shard` runs.
pub fn shard_seeds(range: Range<u64>, shard: Option<Shard>) -> Vec<u64> {
    let Some(sh) = shard else { return range.collect() };
    range
        .enumerate()
        .filter(|(i, _)| *i as u64 % u64::from(sh.count) == u64::from(sh.index - 1))
        .map(|(_, s)| s)
        .collect()
}

/// How one seed ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    /// A checker found a violation, or a node panicked on a broken invariant.
    Violation,
    /// A checker could not decide, or the run could not be made (the cluster did not start).
    Undecided,
}

/// One seed of a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SeedResult {
    pub seed: u64,
    pub outcome: Outcome,
    /// The trace hash (absent when the run failed before it had a history).
    pub trace: Option<String>,
    /// Checkers that failed or could not decide, with their one-line summaries; or why the run
    /// failed.
    pub problems: Vec<String>,
    pub replay: String,
    pub wall_ms: u64,
    pub simulated_ms: u64,
}

impl SeedResult {
    fn of(cfg: &RunConfig, run: &Result<SimRun, SimError>) -> SeedResult {
        let replay = replay_command(cfg);
        match run {
            Ok(r) => {
                let outcome = if r.report.passed() {
                    Outcome::Pass
                } else if r.report.violated() {
                    Outcome::Violation
                } else {
                    Outcome::Undecided
                };
                let problems = (r.report.results.iter())
                    .filter(|c| c.verdict != Verdict::Pass)
                    .map(|c| format!("{} {}: {}", c.checker, c.verdict.name(), c.summary))
                    .collect();
                SeedResult {
                    seed: cfg.seed,
                    outcome,
                    trace: Some(r.trace.clone()),
                    problems,
                    replay,
                    wall_ms: r.wall.as_millis() as u64,
                    simulated_ms: r.simulated().as_millis() as u64,
                }
            }
            Err(e) => SeedResult {
                seed: cfg.seed,
                outcome: if matches!(e, SimError::Panicked(_)) { Outcome::Violation } else { Outcome::Undecided },
                trace: None,
                problems: vec![match e {
                    SimError::Panicked(_) => e.to_string(),
                    SimError::Failed(_) => format!("the run failed: {e}"),
                }],
                replay,
                wall_ms: 0,
                simulated_ms: 0,
            },
        }
    }
}

/// A finished sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub seeds: String,
    pub shard: Option<Shard>,
    pub jobs: usize,
    pub wall_ms: u64,
    /// Seeds finished per minute of wall time, over the whole sweep.
    pub seeds_per_minute: f64,
    pub passed: usize,
    pub violations: usize,
    pub undecided: usize,
    /// Every seed, in seed order.
    pub results: Vec<SeedResult>,
}

impl SweepReport {
    /// The sweep's exit status: 1 on any violation, else 3 if any seed was undecided, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.violations > 0 {
            1
        } else if self.undecided > 0 {
            3
        } else {
            0
        }
    }

    /// The summary lines: every seed that did not pass with its replay command, then totals.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for r in self.results.iter().filter(|r| r.outcome != Outcome::Pass) {
            let what = if r.outcome == Outcome::Violation { "VIOLATION" } else { "undecided" };
            let _ = writeln!(s, "seed {} {what}: {}", r.seed, r.problems.join("; "));
            let _ = writeln!(s, "  replay: {}", r.replay);
        }
        let shard = self.shard.map(|sh| format!(" (shard {sh})")).unwrap_or_default();
        let _ = writeln!(
            s,
            "sweep {}{shard}: {} seeds, {} passed, {} violations, {} undecided, in {:.1} s on {} jobs: {:.0} seeds/minute",
            self.seeds,
            self.results.len(),
            self.passed,
            self.violations,
            self.undecided,
            self.wall_ms as f64 / 1e3,
            self.jobs,
            self.seeds_per_minute
        );
        s
    }

    /// A JUnit XML test suite: one case per seed, a failure (with the replay command) per
    /// violation, a skip per undecided seed.
    pub fn junit(&self) -> String {
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let shard = self.shard.map(|sh| format!(" shard {sh}")).unwrap_or_default();
        let _ = writeln!(
            s,
            "<testsuite name=\"testkeeper sim {}{shard}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            xml(&self.seeds),
            self.results.len(),
            self.violations,
            self.undecided,
            self.wall_ms as f64 / 1e3
        );
        for r in &self.results {
            let _ = write!(
                s,
                "  <testcase classname=\"sim\" name=\"seed {}\" time=\"{:.3}\"",
                r.seed,
                r.wall_ms as f64 / 1e3
            );
            let detail = format!("{}\nreplay: {}", r.problems.join("\n"), r.replay);
            match r.outcome {
                Outcome::Pass => s.push_str("/>\n"),
                Outcome::Violation => {
                    let _ = writeln!(
                        s,
                        "><failure message=\"{}\">{}</failure></testcase>",
                        xml(&r.problems.join("; ")),
                        xml(&detail)
                    );
                }
                Outcome::Undecided => {
                    let _ = writeln!(s, "><skipped message=\"{}\"/></testcase>", xml(&detail));
                }
            }
        }
        s.push_str("</testsuite>\n");
        s
    }
}

/// Runs `base` once per seed of `seeds` (as `shard` splits them) on `jobs` threads; `each` hears
/// of every seed as it finishes (in finishing order), with its run when it had one.
pub fn sweep(
    base: &RunConfig,
    seeds: Range<u64>,
    shard: Option<Shard>,
    jobs: usize,
    each: &(dyn Fn(&SeedResult, Option<&SimRun>) + Sync),
) -> SweepReport {
    let label = format!("{}..{}", seeds.start, seeds.end);
    let list = shard_seeds(seeds, shard);
    let jobs = jobs.clamp(1, list.len().max(1));
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(list.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seed) = list.get(i) else { return };
                let mut cfg = base.clone();
                cfg.seed = seed;
                let run = run_seed(&cfg);
                let result = SeedResult::of(&cfg, &run);
                each(&result, run.as_ref().ok());
                results.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(result);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    results.sort_by_key(|r| r.seed);
    let wall = started.elapsed().max(Duration::from_millis(1));
    let count = |o| results.iter().filter(|r| r.outcome == o).count();
    SweepReport {
        seeds: label,
        shard,
        jobs,
        wall_ms: wall.as_millis() as u64,
        seeds_per_minute: results.len() as f64 * 60.0 / wall.as_secs_f64(),
        passed: count(Outcome::Pass),
        violations: count(Outcome::Violation),
        undecided: count(Outcome::Undecided),
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_shards_parse_and_split_a_range_once() {
        assert_eq!(parse_seeds("0..10").unwrap(), 0..10);
        assert_eq!(parse_seeds("7").unwrap(), 7..8);
        for bad in ["5..5", "9..3", "a..3", "", "1..x"] {
            assert!(parse_seeds(bad).is_err(), "{bad}");
        }
        assert_eq!("3/8".parse::<Shard>().unwrap(), Shard { index: 3, count: 8 });
        for bad in ["0/8", "9/8", "3", "3/0", "x/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let mut all: Vec<u64> =
            (1..=3).flat_map(|k| shard_seeds(100..110, Some(Shard { index: k, count: 3 }))).collect();
        all.sort_unstable();
        assert_eq!(all, (100..110).collect::<Vec<_>>());
        assert_eq!(shard_seeds(100..110, Some(Shard { index: 2, count: 3 })), [101, 104, 107]);
    }
}
