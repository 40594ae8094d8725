//! `testkeeper sim`: the chaos run of the embedded cluster as a deterministic simulation
//! (docs/sim.md). One seed (`--seed`) prints its report, its trace hash and the command that
//! replays it; a range (`--seeds A..B`, optionally `--shard K/N`) sweeps it on `--jobs`
//! threads and prints every seed that did not pass, with its replay command.
//!
//! Exit status: 0 every seed passed; 1 a violation; 2 bad flags; 3 a seed could not be judged.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use testkeeper_chaos::config::{RunConfig, TargetSpec, Workload};
use testkeeper_chaos::sim::sweep::{self, Shard, SweepReport};
use testkeeper_chaos::sim::{self as simulation, SimRun};

use crate::exit::CliError;
use crate::run_flags::RunFlags;

/// Flags of `sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// register, set, ids, counter, queue or lock.
    #[arg(long, value_name = "NAME", default_value = "register")]
    workload: Workload,
    /// Comma list of nemeses, or all, faults, cluster, none (as `chaos --nemesis`).
    #[arg(long, value_name = "LIST")]
    nemesis: Option<String>,
    /// The one seed to run (random and printed when neither this nor --seeds is given).
    #[arg(long, value_name = "N", conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Sweep the seeds A..B (B excluded).
    #[arg(long, value_name = "A..B", value_parser = sweep::parse_seeds)]
    seeds: Option<std::ops::Range<u64>>,
    /// With --seeds: run only this machine's share, every N-th seed from the K-th (1-based).
    #[arg(long, value_name = "K/N", requires = "seeds")]
    shard: Option<Shard>,
    /// With --seeds: seeds run at once, each on a thread of its own (default: every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// Operations in the main phase, over all clients.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    ops: usize,
    /// The main phase ends after this much simulated time even if --ops are not done.
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    #[command(flatten)]
    run: RunFlags,
    /// Write the whole trace (the report with the full history) as JSON to FILE: of the seed,
    /// or in a sweep of the first seed that did not pass.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write the HTML timeline of the same run as --trace to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write the sweep's report (every seed, its outcome, trace hash and replay) as JSON.
    #[arg(long, value_name = "FILE", requires = "seeds")]
    json: Option<PathBuf>,
    /// Write a JUnit XML suite to FILE: one case per seed in a sweep, per checker for one seed.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// Runs `sim`; the exit status says how the seeds were judged.
pub fn run(args: SimArgs) -> ExitCode {
    let cfg = match config(&args) {
        Ok(c) => c,
        Err(e) => return e.report("testkeeper sim"),
    };
    if !simulation::REPLAYS {
        eprintln!(
            "testkeeper sim: warning: built without --cfg tokio_unstable (a RUSTFLAGS of your own replaces \
             .cargo/config.toml's): runs are simulated but may not replay exactly"
        );
    }
    let code = match args.seeds.clone() {
        Some(range) => sweep_run(&args, &cfg, range),
        None => single(&args, &cfg),
    };
    match code {
        Ok(code) => ExitCode::from(code),
        Err(e) => e.report("testkeeper sim"),
    }
}

/// One seed: the report, the trace hash, the verdict and the replay command, in that order.
fn single(args: &SimArgs, cfg: &RunConfig) -> Result<u8, CliError> {
    println!("seed {}", cfg.seed);
    let run = match simulation::run_seed_saying(cfg, true) {
        Ok(run) => run,
        Err(e @ simulation::SimError::Panicked(_)) => {
            println!("VIOLATION: {e}");
            println!("replay with {}", simulation::replay_command(cfg));
            return Ok(1);
        }
        Err(e) => return Err(CliError::Unreachable(e.to_string())),
    };
    print!("{}", run.report.text());
    println!("trace {}", run.trace);
    println!("simulated {:.1} s in {:.2} s of wall time", run.simulated().as_secs_f64(), run.wall.as_secs_f64());
    write_run(args, &run)?;
    if let Some(path) = &args.junit {
        write(path, run.report.junit().as_bytes())?;
    }
    let (verdict, code) = if run.report.passed() {
        ("PASS", 0)
    } else if run.report.violated() {
        ("VIOLATION", 1)
    } else {
        ("UNDECIDED", 3)
    };
    println!("{verdict}: replay with {}", run.report.replay);
    Ok(code)
}

/// A sweep: a line per seed that did not pass (as it finishes), then the summary.
fn sweep_run(args: &SimArgs, cfg: &RunConfig, range: std::ops::Range<u64>) -> Result<u8, CliError> {
    let jobs = args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize);
    let first_bad = std::sync::Mutex::new(None::<(u64, String, String)>);
    // A live count of seeds done, on a terminal only (nothing in CI or into a pipe).
    let bar = crate::progress::bar(sweep::shard_seeds(range.clone(), args.shard).len() as u64, "sim");
    let report: SweepReport = sweep::sweep(cfg, range, args.shard, jobs, &|r, run| {
        bar.inc(1);
        if r.outcome != sweep::Outcome::Pass {
            // As it happens (a long sweep's first finding need not wait for the end); the
            // summary repeats it with the replay command.
            let what = if r.outcome == sweep::Outcome::Violation { "violation" } else { "undecided" };
            bar.suspend(|| println!("seed {}: {what}", r.seed));
            if let Some(run) = run {
                let mut bad = first_bad.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if bad.as_ref().is_none_or(|(s, _, _)| r.seed < *s) {
                    let json = serde_json::to_string_pretty(&run.report).unwrap_or_default();
                    *bad = Some((r.seed, json, run.report.html()));
                }
            }
        }
    });
    bar.finish_and_clear();
    print!("{}", report.text());
    if let Some((seed, json, html)) = first_bad.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        if let Some(path) = &args.trace {
            write(path, json.as_bytes())?;
            println!("trace of seed {seed} written to {}", path.display());
        }
        if let Some(path) = &args.html {
            write(path, html.as_bytes())?;
        }
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_vec_pretty(&report).map_err(|e| CliError::Unreachable(e.to_string()))?;
        write(path, &json)?;
    }
    if let Some(path) = &args.junit {
        write(path, report.junit().as_bytes())?;
    }
    Ok(report.exit_code())
}

fn write_run(args: &SimArgs, run: &SimRun) -> Result<(), CliError> {
    if let Some(path) = &args.trace {
        let json = serde_json::to_vec_pretty(&run.report).map_err(|e| CliError::Unreachable(e.to_string()))?;
        write(path, &json)?;
    }
    if let Some(path) = &args.html {
        write(path, run.report.html().as_bytes())?;
    }
    Ok(())
}

/// Writes a report file; a failure leaves the run without its verdict on record (exit 3).
fn write(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError::Unreachable(format!("writing {}: {e}", path.display())))
}

/// The run the flags describe (the seed is the sweep's first until each seed is set).
fn config(a: &SimArgs) -> Result<RunConfig, CliError> {
    let seed = a.seeds.as_ref().map(|r| r.start).or(a.seed).unwrap_or_else(rand::random);
    let mut cfg = RunConfig::new(a.workload, seed);
    cfg.ops = a.ops;
    cfg.duration = a.duration;
    a.run.apply(&mut cfg);
    cfg.target = TargetSpec::Embedded { nodes: a.run.nodes as usize };
    crate::chaos::set_nemeses(&mut cfg, a.nemesis.as_deref())?;
    Ok(cfg)
}
