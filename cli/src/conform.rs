//! `testkeeper conform`: runs the conformance suite (crate `testkeeper-conformance`) against
//! a server and writes the reports. Exit status 0 only when nothing differs unexpectedly.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use testkeeper_conformance::{report, transcript, Config, Endpoint, Progress, Report};

use crate::addr::{self, HostList, HostPort};

#[derive(Args, Debug)]
pub struct ConformArgs {
    /// The server under test, HOST:PORT; a comma list (a,b,c) names the servers of one
    /// ensemble, which the cluster scenarios need.
    #[arg(long, value_name = "HOST:PORT[,...]", value_parser = addr::host_list)]
    target: HostList,
    /// A live reference server (or ensemble) to run the same scenarios against and diff with.
    #[arg(long, value_name = "HOST:PORT[,...]", value_parser = addr::host_list, conflicts_with = "expect")]
    reference: Option<HostList>,
    /// A golden transcript to diff with instead of a live reference.
    #[arg(long)]
    expect: Option<PathBuf>,
    /// The target's flavor, for expected differences (detected from /keeper/api_version when unset).
    #[arg(long, value_parser = ["keeper", "zookeeper"])]
    flavor: Option<String>,
    /// Where scenarios write (each under <root>/<scenario>); /conformance-<random> when unset.
    #[arg(long)]
    root: Option<String>,
    /// Run only the scenarios that never write.
    #[arg(long)]
    read_only: bool,
    /// Longest wait for a container or TTL node to be collected, in seconds.
    #[arg(long, default_value_t = 90)]
    collect_wait: u64,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write JUnit XML (one testcase per scenario).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write a Markdown compatibility report.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Write the target's normalized transcript (a golden file for --expect).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Run only scenarios whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Run the scenarios of this file (the catalogue's syntax) instead of the catalogue.
    #[arg(long, value_name = "FILE")]
    scenarios: Option<PathBuf>,
}

/// The nodes of an address list, each at its first reachable address.
pub async fn endpoint(list: &[HostPort]) -> Endpoint {
    let mut nodes = Vec::with_capacity(list.len());
    for hp in list {
        nodes.push(hp.reachable().await);
    }
    Endpoint { name: list.iter().map(|h| h.text.as_str()).collect::<Vec<_>>().join(","), nodes }
}

/// [`endpoint`], for a run that needs every node: one that accepts no connection ends the run
/// with no verdict (exit 3) instead of failing every scenario.
async fn reached(list: &[HostPort]) -> Result<Endpoint, crate::exit::CliError> {
    let mut nodes = Vec::with_capacity(list.len());
    for hp in list {
        nodes.push(hp.reach().await?);
    }
    Ok(Endpoint { name: list.iter().map(|h| h.text.as_str()).collect::<Vec<_>>().join(","), nodes })
}

/// Runs the suite and writes what was asked for.
///
/// # Errors
/// Connection or file errors, and "unexpected differences" when any scenario failed.
pub async fn run(args: ConformArgs) -> Result<(), crate::exit::CliError> {
    let reference = match &args.reference {
        Some(r) => Some(reached(&r.0).await?),
        None => None,
    };
    let scenarios = match &args.scenarios {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("--scenarios {}: {e}", p.display()))?;
            Some(testkeeper_conformance::parse::scenarios(&p.display().to_string(), &text).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let cfg = Config {
        scenarios,
        target: Some(reached(&args.target.0).await?),
        reference,
        expect: args.expect.clone(),
        target_flavor: args.flavor.clone(),
        root: args.root.clone(),
        read_only: args.read_only,
        filter: args.filter.clone(),
        collect_wait: Some(Duration::from_secs(args.collect_wait)),
    };
    // A counter on a terminal (the number of scenarios is known only to the suite); the
    // per-scenario lines print either way.
    let bar = crate::progress::bar(0, "conform");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} {pos} scenarios ({elapsed}) {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut progress = |p: Progress<'_>| match p {
        Progress::Started { target, reference, root, read_only } => {
            bar.suspend(|| println!("{}", Report::header(target, reference, root, read_only)));
        }
        Progress::Waiting { scenarios, bound } => {
            bar.suspend(|| {
                println!(
                    "waiting for container and TTL collection in {scenarios} scenario(s) at once (at most {} s, \
                     --collect-wait): ZooKeeper collects every znode.container.checkIntervalMs, 60000 ms by \
                     default; start it with -Dznode.container.checkIntervalMs=1000 to shorten this",
                    bound.as_secs()
                )
            });
        }
        Progress::Scenario(r) => {
            bar.inc(1);
            bar.suspend(|| print!("{}", r.terminal()));
        }
    };
    let (report, lines) = testkeeper_conformance::run(&cfg, &mut progress).await?;
    bar.finish_and_clear();
    print!("\n{}", report.footer());
    let write =
        |path: &PathBuf, text: String| std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()));
    if let Some(p) = &args.json {
        write(p, serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?)?;
    }
    if let Some(p) = &args.junit {
        write(p, report.junit())?;
    }
    if let Some(p) = &args.markdown {
        write(p, report.markdown())?;
    }
    if let Some(p) = &args.record {
        transcript::write_file(p, &testkeeper_conformance::meta(&report), &lines)
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if report.ok() {
        Ok(())
    } else {
        Err(format!("{} scenario(s) differ unexpectedly", report.count(report::Status::Fail)).into())
    }
}
