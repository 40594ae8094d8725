//! `testkeeper publish`: one ADR 0067 publication against a running server (with simulated
//! hosts), writing the normalized result as JSON and describing it in words; with
//! `--reference`, the same publication against a second server and the difference of the two
//! normalized results; or `--chaos`, the fault sweep against embedded servers, or with
//! `--target` and `--admin` against a running one. See docs/publisher.md.

use crate::exit::CliError;
use clap::Args;
use testkeeper_publisher::admin::Admin;
use testkeeper_publisher::chaos::{sweep_with, Remote, RunResult, SweepConfig, SweepReport};
use testkeeper_publisher::hosts::{Behavior, Hosts};
use testkeeper_publisher::{run, Breakage, Config, Link};

use testkeeper_conformance::diff::{json_diff, KeyDiff};

use crate::addr::HostPort;

/// Arguments of `publish`.
#[derive(Args, Debug)]
pub struct PublishArgs {
    /// The server to publish through (required without --chaos; with --chaos, the server to
    /// sweep instead of embedded ones, together with --admin).
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::addr::host_port)]
    target: Option<HostPort>,
    /// The --target server's HTTP admin endpoint, `http://HOST:PORT` (`serve --http`): where
    /// --chaos installs its fault rules and reads what fired.
    #[arg(long, requires = "chaos", value_parser = crate::addr::http_endpoint)]
    admin: Option<String>,
    /// A second server to run the same publication against (same seed, same hosts): both are
    /// described, and the difference of their normalized results printed; exit 1 if any.
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::addr::host_port, conflicts_with = "chaos")]
    reference: Option<HostPort>,
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
    /// Replay one run of the sweep: drop the reply to this request index only (as the
    /// sweep's lines and its failure message print it).
    #[arg(long, value_name = "N", requires = "chaos", conflicts_with = "max_runs")]
    index: Option<usize>,
    /// A deliberately broken publisher, to show the sweep catches it.
    #[arg(long = "break", hide = true)]
    breakage: Option<String>,
}

/// Runs the subcommand.
///
/// # Errors
/// A bad argument, an unreachable server, or (for --chaos) any invariant violation.
pub async fn run(args: PublishArgs) -> Result<(), CliError> {
    let breakage = match args.breakage.as_deref() {
        None => None,
        Some("retry-authority-mutation") => Some(Breakage::RetryAuthorityMutation),
        Some(other) => return Err(CliError::Usage(format!("unknown --break mode '{other}'"))),
    };
    if args.chaos {
        let remote = match (&args.target, args.admin.as_deref()) {
            (None, None) => None,
            (Some(hp), Some(url)) => {
                Some(Remote::new(hp.reachable().await, Admin::new(url).map_err(|e| CliError::Usage(e.to_string()))?))
            }
            _ => return Err("--chaos against a running server needs both --target and --admin".into()),
        };
        let sweep = SweepConfig {
            hosts: args.hosts,
            seed: args.seed,
            breakage,
            max_runs: args.max_runs,
            remote,
            only: args.index,
        };
        return Ok(chaos(&sweep).await?);
    }
    let target = args.target.as_ref().ok_or("--target HOST:PORT is required without --chaos")?;
    let (report, target_used) = publish_once(target.reach().await?, &args, breakage).await?;
    let Some(reference) = &args.reference else {
        write_json(&args, &report.normalized())?;
        eprint!("{}", report.summary(&format!("publish on {target}")));
        return Ok(());
    };
    let (other, reference_used) = publish_once(reference.reach().await?, &args, breakage).await?;
    for (name, used) in [(target.to_string(), &target_used), (reference.to_string(), &reference_used)] {
        if let Some(what) = used {
            eprintln!(
                "testkeeper publish: warning: {name} is not fresh: {what}; a publication on a used server \
                 differs from one on a fresh server, so compare two fresh servers (or empty both first)"
            );
        }
    }
    print!("{}", report.summary(&format!("target {target}")));
    print!("{}", other.summary(&format!("reference {reference}")));
    let (a, b) = (report.normalized(), other.normalized());
    let mut diffs = json_diff(&a, &b);
    // What a person looks at first: the outcome, why, the phases and the permits.
    let rank = |k: &str| ["outcome", "reason", "phases", "permits"].iter().position(|p| k.starts_with(p)).unwrap_or(9);
    diffs.sort_by_key(|d| rank(&d.key));
    write_json(&args, &serde_json::json!({"target": a, "reference": b, "differences": diffs}))?;
    if diffs.is_empty() {
        println!("no difference: the normalized results of {target} and {reference} are equal");
        return Ok(());
    }
    println!("{} difference(s) in the normalized results:", diffs.len());
    for d in &diffs {
        println!("  {}: target {} / reference {}", d.key, KeyDiff::show(&d.target), KeyDiff::show(&d.reference));
    }
    let why = if target_used.is_some() || reference_used.is_some() {
        " (a server was not fresh: see the warning above)"
    } else {
        ""
    };
    Err(format!("the publication differs between {target} and {reference}{why}").into())
}

/// One publication through `addr`, with simulated hosts that succeed.
async fn publish_once(
    addr: std::net::SocketAddr,
    args: &PublishArgs,
    breakage: Option<Breakage>,
) -> Result<(testkeeper_publisher::Report, Option<String>), String> {
    let cfg = Config::new("db.events", args.hosts, args.seed);
    let hosts = Hosts::start(addr, &cfg.ddl_queue, &cfg.sim_root, vec![Behavior::Succeed; args.hosts])
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut link = Link::connect(addr).await.map_err(|e| format!("{addr}: {e}"))?;
    link.breakage = breakage;
    let used = earlier_publications(&mut link, &cfg).await?;
    let report = run::publish(&mut link, &cfg).await;
    hosts.stop();
    Ok((report, used))
}

/// What an earlier publication left on the server, as a sentence, or `None` on a fresh one.
/// A second publication on a server differs from a first (the authority row has a history, the
/// DDL queue has older entries), so `--reference` on servers that were used before reports
/// differences that are not the servers' fault: the user is told why.
async fn earlier_publications(link: &mut Link, cfg: &Config) -> Result<Option<String>, String> {
    let rows = link.children(&format!("{}/{}/data", cfg.keeper_map_prefix, cfg.table)).await?.unwrap_or_default();
    let queued = link.children(&cfg.ddl_queue).await?.unwrap_or_default();
    let queued = queued.iter().filter(|n| n.starts_with("query-")).count();
    Ok((!rows.is_empty() || queued > 0).then(|| {
        format!(
            "{} authority row(s) under {}/{} and {queued} DDL queue entr(ies) under {} were there before this run",
            rows.len(),
            cfg.keeper_map_prefix,
            cfg.table,
            cfg.ddl_queue
        )
    }))
}

/// Writes `value` to --json, or to stdout without one.
fn write_json(args: &PublishArgs, value: &serde_json::Value) -> Result<(), String> {
    let json = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    match &args.json {
        Some(path) => std::fs::write(path, json + "\n").map_err(|e| format!("writing {}: {e}", path.display())),
        None if args.reference.is_none() => {
            println!("{json}");
            Ok(())
        }
        None => Ok(()),
    }
}

/// Runs the sweep with the log at `warn` unless RUST_LOG says otherwise: the embedded servers
/// log every session and fired fault at `info`, which would bury the sweep's own lines. The
/// global subscriber is already installed, so the sweep runs on a thread of its own with a
/// current-thread runtime, where a thread-local subscriber covers every task it spawns (the
/// server spawns no threads). Each run's lines print as it finishes, under a progress bar on a
/// terminal.
async fn quiet_sweep(cfg: &SweepConfig) -> Result<SweepReport, String> {
    let cfg = cfg.clone();
    let on_thread = move || {
        let subscriber = tracing_subscriber::fmt().with_env_filter("warn").with_writer(std::io::stderr).finish();
        let _quiet = std::env::var_os("RUST_LOG").is_none().then(|| tracing::subscriber::set_default(subscriber));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let progress = crate::progress::bar(0, "chaos");
        let report = rt.block_on(sweep_with(&cfg, |run, total| {
            progress.set_length(total as u64);
            progress.inc(1);
            progress.suspend(|| print_run(&cfg, run));
        }));
        progress.finish_and_clear();
        report.map_err(|e| e.to_string())
    };
    tokio::task::spawn_blocking(on_thread).await.map_err(|e| format!("the sweep panicked: {e}"))?
}

/// The command that replays run `index` of this sweep.
fn replay_command(cfg: &SweepConfig, index: usize) -> String {
    let remote = cfg.remote.as_ref().map_or(String::new(), |r| format!(" --target {} --admin URL", r.addr));
    let broken = if cfg.breakage.is_some() { " --break retry-authority-mutation" } else { "" };
    format!("testkeeper publish --chaos{remote} --hosts {} --seed {}{broken} --index {index}", cfg.hosts, cfg.seed)
}

/// One run in words: which request its drop hit, which faults fired, the outcome, and whether
/// the invariants held (an `unknown` outcome is an answer the publisher may give, not a failure).
fn print_run(cfg: &SweepConfig, r: &RunResult) {
    let verdict = if r.violations.is_empty() { "invariants hold" } else { "INVARIANTS VIOLATED" };
    let what = match (r.index, &r.hit) {
        (0, _) => "baseline, no faults".to_string(),
        (i, Some(hit)) => format!("reply to request {i} dropped ({hit})"),
        (i, None) => format!("request {i} never came, nothing dropped"),
    };
    let fired = if r.fired_faults.is_empty() { "none".to_string() } else { r.fired_faults.join("; ") };
    println!("run {:>3}  {verdict:<19}  outcome {:<14} {what}; faults fired: {fired}", r.index, r.outcome);
    for v in &r.violations {
        println!("      violation: {v}");
    }
    if !r.violations.is_empty() {
        println!("      replay: {}", replay_command(cfg, r.index));
    }
}

async fn chaos(cfg: &SweepConfig) -> Result<(), String> {
    let seed = cfg.seed;
    let rep = quiet_sweep(cfg).await?;
    let fired: usize = rep.runs.iter().map(|r| r.fired).sum();
    let place = cfg.remote.as_ref().map_or(String::new(), |r| format!(" under {}", r.root));
    let outcomes: Vec<String> = rep.outcomes().iter().map(|(o, n)| format!("{o} {n}")).collect();
    println!(
        "chaos: seed {seed}, {} runs{place}, {fired} faults fired, outcomes: {}",
        rep.runs.len(),
        outcomes.join(", ")
    );
    let bad = rep.failures();
    if let Some(first) = bad.first() {
        return Err(format!(
            "{} runs violated the invariants; replay the first with `{}`",
            bad.len(),
            replay_command(cfg, first.index)
        ));
    }
    Ok(())
}
