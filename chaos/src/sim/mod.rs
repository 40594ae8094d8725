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

/// Why a simulated run has no report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// Something panicked: a node on a broken invariant (which poisons its engine), or the
    /// harness. A finding about the seed, as a violation is.
    Panicked(String),
    /// The run could not be made: a bad configuration, or the cluster never started.
    Failed(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Panicked(m) => write!(f, "panicked: {m}"),
            SimError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SimError {}

impl SimError {
    /// A run's error: a panic of a task shows as tokio's "task N panicked with message ...".
    fn of_run(e: crate::run::RunError) -> SimError {
        match e {
            crate::run::RunError::Panicked { .. } => SimError::Panicked(e.to_string()),
            e => SimError::Failed(e.to_string()),
        }
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
pub fn run_seed(cfg: &RunConfig) -> Result<SimRun, SimError> {
    run_seed_saying(cfg, false)
}

/// [`run_seed`], printing the run's lines as it goes (the schedule, the phases) when `say`.
///
/// # Errors
/// As [`run_seed`].
pub fn run_seed_saying(cfg: &RunConfig, say: bool) -> Result<SimRun, SimError> {
    if !matches!(cfg.target, TargetSpec::Embedded { .. }) {
        return Err(SimError::Failed("a simulation runs the embedded cluster only (drop --target)".into()));
    }
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name(format!("testkeeper-sim-{}", cfg.seed))
        .spawn(move || run_here(&cfg, say))
        .map_err(|e| SimError::Failed(format!("starting the simulation thread: {e}")))?
        .join()
        .map_err(|p| {
            let msg = (p.downcast_ref::<String>().cloned())
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            SimError::Panicked(format!("the simulation: {msg}"))
        })?
}

/// Whether this build seeds tokio's runtime, which exact replay needs (`.cargo/config.toml`
/// sets `--cfg tokio_unstable`; a `RUSTFLAGS` of one's own replaces it).
pub const REPLAYS: bool = cfg!(tokio_unstable);

thread_local! {
    /// Panics on this thread while it runs a simulation, in order. Every node, client and the
    /// harness run on the simulation's thread, and a panicking task (a node's Raft driver on a
    /// broken invariant, say) is caught by the runtime while the rest go on: a process would
    /// have aborted there, so the seed must not pass.
    static PANICS: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once per process) a panic hook that records a panic on a simulation's thread,
/// then hands it to the hook that was there before.
fn record_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = PANICS.try_with(|p| {
                if let Some(list) = p.borrow_mut().as_mut() {
                    let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                    let msg = (info.payload().downcast_ref::<String>().cloned())
                        .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    list.push(format!("{msg}{at}"));
                }
            });
            before(info);
        }));
    });
}

/// Runs `cfg` on this thread, which must not run a runtime or a simulation already.
fn run_here(cfg: &RunConfig, say: bool) -> Result<SimRun, SimError> {
    let started = Instant::now();
    record_panics();
    PANICS.with(|p| *p.borrow_mut() = Some(Vec::new()));
    let _net = testkeeper_wire::net::sim::enter();
    let mut rt = tokio::runtime::Builder::new_current_thread();
    rt.enable_time().start_paused(true);
    // tokio's own random choices (a watch channel's waiter shards, an unbiased select!) from
    // the seed too: without this, two replays wake tasks in different orders.
    #[cfg(tokio_unstable)]
    rt.rng_seed(tokio::runtime::RngSeed::from_bytes(&cfg.seed.to_le_bytes()));
    let rt = rt.build().map_err(|e| SimError::Failed(format!("building the simulation's runtime: {e}")))?;
    let print = |line: &str| {
        if say {
            println!("{line}");
        }
    };
    let result = rt.block_on(crate::run::run_with(cfg, &print, sim_setup));
    // Nothing may outlive the run: its tasks end with the runtime, here.
    drop(rt);
    let panics = PANICS.with(|p| p.borrow_mut().take()).unwrap_or_default();
    if let Some(first) = panics.first() {
        return Err(SimError::Panicked(format!("{first} ({} panics in all)", panics.len())));
    }
    let mut report = result.map_err(SimError::of_run)?;
    report.replay = replay_command(cfg);
    let trace = trace_hash(&report).map_err(|e| SimError::Failed(format!("serializing the trace: {e}")))?;
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
pub fn trace_hash(report: &Report) -> Result<String, serde_json::Error> {
    let bytes = serde_json::to_vec(&report.history)?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests;
