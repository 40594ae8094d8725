//! `testkeeper sim`: a chaos run of the embedded cluster as a deterministic simulation. The
//! run is the same as `testkeeper chaos` (workloads, nemeses, checkers), but every node,
//! client and fault runs on one thread: a current-thread tokio runtime with paused time, on
//! the thread's simulated network (`testkeeper_wire::net::sim`). Nothing waits for a wall
//! clock or a kernel, so the seed decides everything and a run replays exactly: the same
//! seed gives the same history, byte for byte, and so the same trace hash.
//!
//! # Layout
//! - this file: one seed ([`run_seed`]), its trace hash, and the replay command.
//! - `sweep`: many seeds on every core, sharded across machines, with a report per shard.

pub mod sweep;

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::config::{RunConfig, TargetSpec};
use crate::report::Report;

/// Simulated latency of every link between nodes: 1 ms plus up to 1 ms of jitter, drawn from
/// the seed (so messages on one link reorder, as on a real network).
pub const LINK_DELAY_MS: u64 = 1;
pub const LINK_JITTER_MS: u64 = 1;

/// One seed's run.
#[derive(Debug)]
pub struct SimRun {
    pub report: Report,
    /// SHA-256 of the whole recorded trace (history, nemesis, what every node applied), hex.
    pub trace: String,
    /// Wall time the simulation took.
    pub wall: Duration,
}

impl SimRun {
    /// Simulated time the run covered.
    pub fn simulated(&self) -> Duration {
        Duration::from_millis(self.report.elapsed_ms)
    }
}

/// The command line that replays `cfg` as a simulation.
pub fn replay_command(cfg: &RunConfig) -> String {
    // The chaos command line with the simulation's name: the options are the same.
    cfg.replay_command().replacen("testkeeper chaos", "testkeeper sim", 1)
}

/// Runs `cfg` (an embedded target) as a simulation, on a thread of its own.
///
/// # Errors
/// The target is not the embedded cluster, or the run itself fails (see `run::run`).
pub fn run_seed(cfg: &RunConfig) -> Result<SimRun, String> {
    if !matches!(cfg.target, TargetSpec::Embedded { .. }) {
        return Err("a simulation runs the embedded cluster only (drop --target)".into());
    }
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name(format!("testkeeper-sim-{}", cfg.seed))
        .spawn(move || run_here(&cfg))
        .map_err(|e| format!("starting the simulation thread: {e}"))?
        .join()
        .map_err(|_| "the simulation panicked".to_string())?
}

/// Whether this build seeds tokio's runtime, which exact replay needs (`.cargo/config.toml`
/// sets `--cfg tokio_unstable`; a `RUSTFLAGS` of one's own replaces it).
pub const REPLAYS: bool = cfg!(tokio_unstable);

/// Runs `cfg` on this thread, which must not run a runtime or a simulation already.
fn run_here(cfg: &RunConfig) -> Result<SimRun, String> {
    let started = Instant::now();
    let _net = testkeeper_wire::net::sim::enter();
    let mut rt = tokio::runtime::Builder::new_current_thread();
    rt.enable_time().start_paused(true);
    // tokio's own random choices (a watch channel's waiter shards, an unbiased select!) from
    // the seed too: without this, two replays wake tasks in different orders.
    #[cfg(tokio_unstable)]
    rt.rng_seed(tokio::runtime::RngSeed::from_bytes(&cfg.seed.to_le_bytes()));
    let rt = rt.build().map_err(|e| format!("building the simulation's runtime: {e}"))?;
    let report = rt.block_on(crate::run::run_with(cfg, &|_| {}, sim_setup))?;
    // Nothing may outlive the run: its tasks end with the runtime, here.
    drop(rt);
    let trace = trace_hash(&report)?;
    Ok(SimRun { report, trace, wall: started.elapsed() })
}

/// What a simulation adds to the embedded cluster before the run: seeded latency on every link.
fn sim_setup(c: &testkeeper_server::cluster::embed::TestKeeperCluster) {
    let f = testkeeper_server::cluster::net::mem::LinkFaults {
        delay_ms: LINK_DELAY_MS,
        jitter_ms: LINK_JITTER_MS,
        ..Default::default()
    };
    c.set_default_link(f);
}

/// SHA-256 of everything the run recorded, as the `trace` line prints it. The history holds
/// every op with its simulated times and replies, every nemesis action, and every entry each
/// node applied with its digest: two runs with one hash did the same thing.
///
/// # Errors
/// The history cannot be serialized (never for a history a run produced).
pub fn trace_hash(report: &Report) -> Result<String, String> {
    let bytes = serde_json::to_vec(&report.history).map_err(|e| format!("serializing the trace: {e}"))?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests;
