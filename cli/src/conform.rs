//! `testkeeper conform`: runs the conformance suite (crate `testkeeper-conformance`) against
//! a server and writes the reports. Exit status 0 only when nothing differs unexpectedly.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use testkeeper_conformance::{report, transcript, Config, Status};

#[derive(Args, Debug)]
pub struct ConformArgs {
    /// The server under test.
    #[arg(long)]
    target: SocketAddr,
    /// A live reference server to run the same scenarios against and diff with.
    #[arg(long, conflicts_with = "expect")]
    reference: Option<SocketAddr>,
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
}

/// Runs the suite and writes what was asked for.
///
/// # Errors
/// Connection or file errors, and "unexpected differences" when any scenario failed.
pub async fn run(args: ConformArgs) -> Result<(), String> {
    let cfg = Config {
        target: Some(args.target),
        reference: args.reference,
        expect: args.expect.clone(),
        target_flavor: args.flavor.clone(),
        root: args.root.clone(),
        read_only: args.read_only,
        filter: args.filter.clone(),
    };
    let mut progress = |r: &testkeeper_conformance::ScenarioResult| {
        println!("{:<20} {} ({} steps, {} ms)", r.status.label(), r.name, r.steps, r.duration_ms);
        if r.status == Status::Fail {
            for l in report::failure_text(r).lines() {
                println!("    {l}");
            }
        }
    };
    let (report, lines) = testkeeper_conformance::run(&cfg, &mut progress).await?;
    println!("\n{}", report.summary_table());
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
        Err(format!("{} scenario(s) differ unexpectedly", report.count(Status::Fail)))
    }
}
