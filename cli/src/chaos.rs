//! `testkeeper chaos`: Jepsen-style workloads under a seeded nemesis against an embedded
//! testkeeper cluster (the default) or any Keeper/ZooKeeper (`--target`), judged by the
//! checkers of `testkeeper-chaos` (docs/chaos.md).
//!
//! Exit status: 0 every checker passed; 1 a checker found a violation; 2 bad flags; 3 the run
//! could not be judged (the target failed, or a checker could not decide).

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use testkeeper_chaos::config::{parse_nemeses, Nemesis, RunConfig, TargetSpec, Workload};

use crate::addr::{host_list, http_endpoint, HostList};
use crate::exit::CliError;
use crate::run_flags::RunFlags;

/// Flags of `chaos`.
#[derive(Args, Debug)]
pub struct ChaosArgs {
    /// register, set, ids, counter, queue or lock.
    #[arg(long, value_name = "NAME", default_value = "register")]
    workload: Workload,
    /// Comma list of nemeses, or all (every one the target supports), faults, cluster, none.
    #[arg(long, value_name = "LIST")]
    nemesis: Option<String>,
    /// Seed of the schedule and of every client's choices (random and printed when absent).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Operations in the main phase, over all clients.
    #[arg(long, value_name = "N", default_value_t = 600)]
    ops: usize,
    /// The main phase ends after this long even if --ops are not done (e.g. 5s, 800ms).
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// External servers HOST:PORT,... instead of the embedded cluster (client-side faults only,
    /// or with --admin the fault rules of testkeeper's admin endpoint).
    #[arg(long, value_name = "HOST:PORT,...", value_parser = host_list)]
    target: Option<HostList>,
    /// testkeeper admin endpoints (serve --http) of the --target servers, comma-separated.
    #[arg(long, value_name = "ADDR,...", requires = "target")]
    admin: Option<String>,
    #[command(flatten)]
    run: RunFlags,
    /// Write the full report (schedule, results, the whole history) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<std::path::PathBuf>,
    /// Write the checkers' results as a JUnit XML test suite to FILE (one case per checker).
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
    /// Write a self-contained HTML report to FILE: a timeline per key and process with the
    /// nemesis windows and the anomalies marked, the checkers' table, the replay command.
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
}

/// Runs `chaos`; the exit status says how the run was judged.
pub async fn run(args: ChaosArgs) -> ExitCode {
    let cfg = match config(args.workload, &args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("testkeeper chaos: {e}");
            return ExitCode::from(2);
        }
    };
    println!("seed {}", cfg.seed);
    // A live line of the main phase's ops on a terminal (nothing in CI or into a pipe).
    let mut cfg = cfg;
    let done = Arc::new(AtomicUsize::new(0));
    cfg.progress = Some(done.clone());
    let bar = crate::progress::bar(cfg.ops as u64, "chaos");
    let ticker = {
        let (bar, done) = (bar.clone(), done.clone());
        tokio::spawn(async move {
            loop {
                bar.set_position(done.load(Ordering::Relaxed) as u64);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let result = testkeeper_chaos::run::run(&cfg, &|line| bar.suspend(|| println!("{line}"))).await;
    ticker.abort();
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("testkeeper chaos: {e}");
            return ExitCode::from(3);
        }
    };
    print!("{}", report.text());
    let json = serde_json::to_vec_pretty(&report).map_err(|e| e.to_string());
    let outputs = [
        (&args.json, json),
        (&args.junit, Ok(report.junit().into_bytes())),
        (&args.html, Ok(report.html().into_bytes())),
    ];
    for (path, bytes) in outputs {
        let Some(path) = path else { continue };
        let written =
            bytes.and_then(|b| std::fs::write(path, b).map_err(|e| format!("writing {}: {e}", path.display())));
        if let Err(e) = written {
            eprintln!("testkeeper chaos: {e}");
            return ExitCode::from(3);
        }
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else if report.violated() {
        ExitCode::from(1)
    } else {
        ExitCode::from(3)
    }
}

/// The run the flags describe.
fn config(workload: Workload, a: &ChaosArgs) -> Result<RunConfig, String> {
    let mut cfg = RunConfig::new(workload, a.seed.unwrap_or_else(rand::random));
    cfg.ops = a.ops;
    cfg.duration = a.duration;
    a.run.apply(&mut cfg);
    if let Some(list) = &a.target {
        if a.run.broken.is_some() {
            return Err("--broken runs the embedded cluster; it cannot go with --target".into());
        }
        let admin = match &a.admin {
            Some(s) => s.split(',').filter(|p| !p.trim().is_empty()).map(http_endpoint).collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        cfg.target = TargetSpec::External { addrs: list.0.iter().map(|h| h.addrs[0]).collect(), admin };
    } else {
        cfg.target = TargetSpec::Embedded { nodes: a.run.nodes as usize };
    }
    set_nemeses(&mut cfg, a.nemesis.as_deref()).map_err(|e| e.to_string())?;
    Ok(cfg)
}

/// Sets the nemeses `--nemesis` names (every one when absent) on `cfg`, whose target is set.
/// `all` (and the default) means every nemesis the target supports; a name given explicitly
/// that it cannot do is an error.
///
/// # Errors
/// A name that is not a nemesis, or one the target cannot do.
pub fn set_nemeses(cfg: &mut RunConfig, list: Option<&str>) -> Result<(), CliError> {
    cfg.nemeses = match list {
        Some(s) => parse_nemeses(s).map_err(|e| CliError::Usage(e.to_string()))?,
        None => Nemesis::ALL.to_vec(),
    };
    let explicit = list.is_some_and(|s| !s.split(',').any(|p| matches!(p.trim(), "all" | "faults" | "cluster")));
    let unsupported: Vec<Nemesis> = cfg.unsupported().into_iter().map(|(n, _)| n).collect();
    if explicit {
        if let Some((n, why)) = cfg.unsupported().first() {
            return Err(CliError::Usage(format!("nemesis {n} {why}")));
        }
    }
    cfg.nemeses.retain(|n| !unsupported.contains(n));
    Ok(())
}
