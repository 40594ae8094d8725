//! `testkeeper publish`: one ADR 0067 publication against a running server (with simulated
//! hosts), writing the normalized result as JSON; or `--chaos`, the fault sweep against an
//! embedded server. See docs/publisher.md.

use std::net::SocketAddr;

use clap::Args;
use testkeeper_publisher::chaos::{sweep, SweepConfig};
use testkeeper_publisher::hosts::{Behavior, Hosts};
use testkeeper_publisher::{run, Breakage, Config, Link};

/// Arguments of `publish`.
#[derive(Args, Debug)]
pub struct PublishArgs {
    /// The server to publish through (required without --chaos).
    #[arg(long)]
    target: Option<SocketAddr>,
    /// Expected hosts (simulated DDL workers).
    #[arg(long, default_value_t = 3)]
    hosts: usize,
    /// Seed of the operation identity, the token and the chaos faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the normalized result.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Run the fault sweep against an embedded testkeeper instead.
    #[arg(long)]
    chaos: bool,
    /// Sweep at most this many faulted runs.
    #[arg(long)]
    max_runs: Option<usize>,
    /// A deliberately broken publisher, to show the sweep catches it.
    #[arg(long = "break", hide = true)]
    breakage: Option<String>,
}

/// Runs the subcommand.
///
/// # Errors
/// A bad argument, an unreachable server, or (for --chaos) any invariant violation.
pub async fn run(args: PublishArgs) -> Result<(), String> {
    let breakage = match args.breakage.as_deref() {
        None => None,
        Some("retry-authority-mutation") => Some(Breakage::RetryAuthorityMutation),
        Some(other) => return Err(format!("unknown --break mode '{other}'")),
    };
    if args.chaos {
        return chaos(args.hosts, args.seed, args.max_runs, breakage).await;
    }
    let addr = args.target.ok_or("--target HOST:PORT is required without --chaos")?;
    let cfg = Config::new("db.events", args.hosts, args.seed);
    let hosts = Hosts::start(addr, &cfg.ddl_queue, &cfg.sim_root, vec![Behavior::Succeed; args.hosts])
        .await
        .map_err(|e| e.to_string())?;
    let mut link = Link::connect(addr).await.map_err(|e| e.to_string())?;
    link.breakage = breakage;
    let report = run::publish(&mut link, &cfg).await;
    hosts.stop();
    let json = serde_json::to_string_pretty(&report.normalized()).map_err(|e| e.to_string())?;
    match &args.json {
        Some(path) => std::fs::write(path, json + "\n").map_err(|e| format!("writing {}: {e}", path.display()))?,
        None => println!("{json}"),
    }
    eprintln!("publish: outcome {:?} {}", report.outcome, report.reason);
    Ok(())
}

async fn chaos(hosts: usize, seed: u64, max_runs: Option<usize>, breakage: Option<Breakage>) -> Result<(), String> {
    let rep = sweep(&SweepConfig { hosts, seed, breakage, max_runs }).await.map_err(|e| e.to_string())?;
    for r in &rep.runs {
        let mark = if r.violations.is_empty() { "ok " } else { "BAD" };
        println!("{mark} run {:>3}: outcome {:<14} faults fired {} {:?}", r.index, r.outcome, r.fired, r.faults);
        for v in &r.violations {
            println!("      violation: {v}");
        }
    }
    let fired: usize = rep.runs.iter().map(|r| r.fired).sum();
    println!("chaos: seed {seed}, {} runs, {fired} faults fired, outcomes {:?}", rep.runs.len(), rep.outcomes());
    let bad = rep.failures();
    if let Some(first) = bad.first() {
        return Err(format!(
            "{} runs violated the invariants; replay with `testkeeper publish --chaos --hosts {hosts} --seed {seed}{}` (first bad index {})",
            bad.len(),
            if breakage.is_some() { " --break retry-authority-mutation" } else { "" },
            first.index
        ));
    }
    Ok(())
}
