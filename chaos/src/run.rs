//! One run, start to finish:
//! 1. the target: an embedded cluster started from the seed (with a tap on what every node
//!    applies), or the external servers given;
//! 2. the workload's nodes created; the nemesis schedule drawn from the seed and printed;
//! 3. the main phase: `clients` workers and the nemesis, until `ops` are invoked or
//!    `duration` passed;
//! 4. heal: every fault undone, every node back, and a write must commit within a bound
//!    (`liveness`);
//! 5. the final phase: the workload's final reads on a fresh session to every server;
//! 6. on the embedded cluster, every node caught up, its digest and the tap's record kept;
//! 7. the checkers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::tap::Tap;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::http::client::AdminClient;
use tokio::sync::{watch, Notify};

use crate::config::{Nemesis, RunConfig, TargetSpec};
use crate::history::{History, Op};
use crate::nemesis::actor::{Actor, Control};
use crate::nemesis::{describe, plan};
use crate::report::Report;
use crate::worker::{self, Shared};
use crate::{checks, record, workload};

/// Why a run could not be carried out (a run that ran and found violations is a [`Report`]).
#[derive(Debug)]
pub enum RunError {
    /// A nemesis needs what the target lacks (fault rules, a cluster).
    Unsupported { nemesis: Nemesis, why: &'static str },
    /// The embedded cluster did not start, or elected no leader in time.
    Cluster { what: &'static str, source: std::io::Error },
    /// An `--admin` URL that is not `http://HOST:PORT`.
    Admin(testkeeper_server::http::client::AdminUrlError),
    /// No server of the target answered.
    Unreachable,
    /// The workload's nodes could not be created.
    Setup(crate::workload::SetupError),
    /// A worker or the nemesis task panicked (the panic's text).
    Panicked { task: &'static str, why: String },
    /// A node did not come back when the run healed everything.
    Heal(crate::nemesis::actor::HealError),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Unsupported { nemesis, why } => write!(f, "nemesis {nemesis} {why}"),
            RunError::Cluster { what, source } => write!(f, "{what}: {source}"),
            RunError::Admin(e) => e.fmt(f),
            RunError::Unreachable => f.write_str("no server of the target answers"),
            RunError::Setup(e) => e.fmt(f),
            RunError::Panicked { task, why } => write!(f, "{task} panicked: {why}"),
            RunError::Heal(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RunError {}

/// How long healing and the final phase may take before the run gives up on them.
const SETTLE: Duration = Duration::from_secs(15);

/// Runs `cfg`; `say` gets each line to print as it happens (the schedule, phase changes).
///
/// # Errors
/// The target cannot be started or reached, a nemesis needs what the target lacks, or the
/// workload's nodes cannot be created.
pub async fn run(cfg: &RunConfig, say: &(dyn Fn(&str) + Sync)) -> Result<Report, RunError> {
    run_with(cfg, say, |_| {}).await
}

/// [`run`], with `setup` applied to the embedded cluster once it has a leader (a simulation's
/// link latency).
///
/// # Errors
/// As [`run`].
pub async fn run_with(
    cfg: &RunConfig,
    say: &(dyn Fn(&str) + Sync),
    setup: impl FnOnce(&TestKeeperCluster),
) -> Result<Report, RunError> {
    if let Some(&(nemesis, why)) = cfg.unsupported().first() {
        return Err(RunError::Unsupported { nemesis, why });
    }
    let tap = Tap::new();
    let (control, addrs, target) = match &cfg.target {
        TargetSpec::Embedded { nodes } => {
            let mut scfg = ServerConfig::new(cfg.flavor);
            scfg.min_session_timeout_ms = 1000;
            scfg.broken = cfg.broken;
            scfg.tap = Some(tap.clone());
            let c = TestKeeperCluster::start(*nodes, scfg, cfg.seed)
                .await
                .map_err(|source| RunError::Cluster { what: "starting the cluster", source })?;
            c.await_leader(SETTLE).await.map_err(|source| RunError::Cluster { what: "electing a leader", source })?;
            setup(&c);
            let addrs: Vec<SocketAddr> = c.ids().iter().map(|id| c.addr(*id)).collect();
            let broken = cfg.broken.map(|b| format!(", deliberately broken: {b}")).unwrap_or_default();
            (Control::Cluster(c), addrs, format!("embedded {nodes}-node {} cluster{broken}", cfg.flavor))
        }
        TargetSpec::External { addrs, admin } => {
            let admins =
                admin.iter().map(|a| AdminClient::new(a)).collect::<Result<Vec<_>, _>>().map_err(RunError::Admin)?;
            let text = addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",");
            let control = if admins.is_empty() { Control::Plain } else { Control::Admin(admins) };
            (control, addrs.clone(), text)
        }
    };
    let nodes = addrs.len();
    say(&format!(
        "chaos: workload {} on {target}, {} clients, {} ops or {:.1} s, seed {}",
        cfg.workload,
        cfg.clients,
        cfg.ops,
        cfg.duration.as_secs_f64(),
        cfg.seed
    ));
    let windows = plan(cfg.seed, &cfg.nemeses, cfg.duration);
    let schedule: Vec<String> = windows.iter().map(|w| describe(w, nodes)).collect();
    // The plan, before the run: a run that finishes its ops early never reaches the last
    // windows, and the report lists only the windows that ran.
    say(&format!(
        "schedule ({} windows planned from seed {}; those that ran are listed after the run):",
        schedule.len(),
        cfg.seed
    ));
    for line in &schedule {
        say(&format!("  {line}"));
    }

    let start = Instant::now();
    let kicks: Arc<Vec<Notify>> = Arc::new((0..cfg.clients).map(|_| Notify::new()).collect());
    let sh = Arc::new(Shared {
        cfg: cfg.clone(),
        addrs: addrs.clone(),
        start,
        deadline: start + cfg.duration,
        left: AtomicUsize::new(cfg.ops),
        next_process: AtomicU64::new(cfg.clients as u64),
        kicks: kicks.clone(),
    });
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let setup = worker::connect(&sh, &mut rng, Instant::now() + SETTLE).await.ok_or(RunError::Unreachable)?;
    workload::setup(cfg, &setup).await.map_err(RunError::Setup)?;
    drop(setup);

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut actor = Actor { control, kicks };
    let nemesis = tokio::spawn(async move {
        let events = actor.run(&windows, start, stop_rx).await;
        (actor, events)
    });
    let workers: Vec<_> = (0..cfg.clients).map(|w| tokio::spawn(worker::run(sh.clone(), w))).collect();
    let mut ops: Vec<Op> = Vec::new();
    for w in workers {
        ops.extend(w.await.map_err(|e| RunError::Panicked { task: "a worker", why: e.to_string() })?);
    }
    let _ = stop_tx.send(true);
    let (mut actor, events) =
        nemesis.await.map_err(|e| RunError::Panicked { task: "the nemesis", why: e.to_string() })?;
    let healed_ns = sh.ns();
    say(&format!("main phase done: {} ops in {:.1} s; healing", ops.len(), healed_ns as f64 / 1e9));
    actor.heal_all().await.map_err(RunError::Heal)?;
    let live = crate::liveness::probe(&sh, Instant::now()).await;
    if let Control::Cluster(c) = &actor.control {
        // Without a leader the final reads fail and their checkers cannot decide; liveness
        // has already failed then, and says why.
        if let Err(e) = c.await_leader(SETTLE).await {
            say(&format!("after healing: {e}"));
        }
    }

    ops.extend(final_phase(&sh).await);
    let mut history = History { ops, nemesis: events, healed_ns, cluster: None };
    history.ops.sort_by_key(|o| (o.invoke_ns, o.worker));
    for (i, op) in history.ops.iter_mut().enumerate() {
        op.id = i;
    }
    if let Control::Cluster(c) = actor.control {
        history.cluster = Some(settle(&c, &tap, start).await);
        c.shutdown().await;
    }
    let mut results = checks::run(&history);
    results.push(live);
    Ok(Report {
        seed: cfg.seed,
        workload: cfg.workload.name().into(),
        nemeses: cfg.nemeses.iter().map(|n| n.name().to_string()).collect(),
        target,
        schedule,
        replay: cfg.replay_command(),
        elapsed_ms: start.elapsed().as_millis() as u64,
        results,
        history,
    })
}

/// The workload's final reads, on a fresh session to every server in turn.
async fn final_phase(sh: &Shared) -> Vec<Op> {
    let steps = workload::finals(&sh.cfg);
    let mut ops = Vec::new();
    if steps.is_empty() {
        return ops;
    }
    for (node, addr) in sh.addrs.iter().enumerate() {
        let until = Instant::now() + SETTLE;
        for step in &steps {
            // A final read that fails (the server still settling) is tried again.
            loop {
                let process = sh.next_process.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Ok(conn) =
                    crate::client::Conn::connect(*addr, node, sh.cfg.op_timeout, sh.cfg.session_timeout_ms).await
                else {
                    if Instant::now() > until {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let mut st = workload::WorkerState { worker: usize::MAX / 2, ..Default::default() };
                let (mut op, _) =
                    worker::invoke(sh, &conn, process, sh.cfg.clients + node, step.clone(), &mut st, None).await;
                op.final_phase = true;
                let ok = op.ok();
                ops.push(op);
                if ok || Instant::now() > until {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    ops
}

/// Waits until every node applied what the leader did, then keeps their digests and the tap.
async fn settle(c: &TestKeeperCluster, tap: &Tap, start: Instant) -> crate::history::ClusterRecord {
    let top = c.statuses().iter().map(|s| s.applied).max().unwrap_or(0);
    // A node that does not catch up shows in the digests the white-box check compares.
    let _ = c.await_applied(top, SETTLE).await;
    let mut rec = record::from_tap(&tap.snapshot(), start);
    rec.final_digests =
        (c.ids().into_iter()).filter_map(|id| c.node(id).map(|n| (id, n.status().applied, n.digest()))).collect();
    rec
}
