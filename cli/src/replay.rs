//! `testkeeper replay FILE --target HOST:PORT`: plays a `testkeeper proxy --record` recording
//! against a server and prints every answer that differs from the recorded one.

use std::path::PathBuf;

use clap::Args;
use testkeeper_conformance::replay::replay;

use crate::addr::{self, HostPort};

/// Flags of `replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The recording (`testkeeper proxy --record FILE`).
    file: PathBuf,
    /// The server to play it against (start it in the state the recording's upstream was in).
    #[arg(long, value_name = "HOST:PORT", value_parser = addr::host_port)]
    target: HostPort,
    /// The target's flavor, for table-listed differences (detected when unset).
    #[arg(long, value_parser = ["keeper", "zookeeper"])]
    flavor: Option<String>,
}

/// Replays and reports.
///
/// # Errors
/// An unreadable recording, an unreachable target, and "differences" when any was found.
pub async fn run(args: ReplayArgs) -> Result<(), crate::exit::CliError> {
    // The recording first: a file that does not read is the caller's mistake, whatever the
    // target does.
    let (meta, _) = testkeeper_conformance::proxy::record::read(&args.file)?;
    let target = args.target.reach().await?;
    let flavor = match &args.flavor {
        Some(f) => f.clone(),
        None => testkeeper_conformance::detect_flavor(target).await?,
    };
    println!(
        "replay: {} (recorded from {} {}) against {} ({flavor})",
        args.file.display(),
        meta.upstream,
        meta.flavor,
        args.target
    );
    let mut print =
        |d: &testkeeper_conformance::proxy::Divergence| println!("{}", d.render("difference", "recorded", "replayed"));
    let report = replay(&args.file, target, flavor != meta.flavor, &mut print).await?;
    println!(
        "replay: {} connection(s), {} request(s), {} not replayable, {} difference(s)",
        report.connections,
        report.requests,
        report.not_replayable,
        report.differences.len()
    );
    if report.differences.is_empty() {
        Ok(())
    } else {
        Err(format!("{} difference(s) from the recording", report.differences.len()).into())
    }
}
