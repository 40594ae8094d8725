//! One client worker of the main phase: it keeps a session to one server of the target,
//! invokes the workload's next op, records how it completed, and starts a new session (a new
//! Jepsen process) whenever the outcome of an op is left open or the session is lost.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

use crate::client::Conn;
use crate::config::RunConfig;
use crate::history::{Op, Outcome, Ret};
use crate::workload::{self, Done, Step, WorkerState};

/// What the workers share.
pub struct Shared {
    pub cfg: RunConfig,
    pub addrs: Vec<SocketAddr>,
    pub start: Instant,
    /// The main phase ends at this instant whatever is left.
    pub deadline: Instant,
    /// Ops left to invoke in the main phase.
    pub left: AtomicUsize,
    /// The next process id (workers start as processes 0..clients).
    pub next_process: AtomicU64,
    /// One per worker: the nemesis drops that worker's connection.
    pub kicks: Arc<Vec<Notify>>,
}

impl Shared {
    /// ns since the run started.
    pub fn ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// Connects to some server, trying them in a seeded order; `None` once the deadline passed.
pub async fn connect(sh: &Shared, rng: &mut ChaCha8Rng, until: Instant) -> Option<Conn> {
    let n = sh.addrs.len();
    loop {
        let first = rng.gen_range(0..n);
        for i in 0..n {
            let node = (first + i) % n;
            let timeout = sh.cfg.op_timeout;
            if let Ok(c) = Conn::connect(sh.addrs[node], node, timeout, sh.cfg.session_timeout_ms).await {
                return Some(c);
            }
        }
        if Instant::now() > until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Runs `step` on `conn` as op of `process`, racing the nemesis's kick of this worker.
pub async fn invoke(
    sh: &Shared,
    conn: &Conn,
    process: u64,
    w: usize,
    step: Step,
    st: &mut WorkerState,
    kick: Option<&Notify>,
) -> (Op, bool) {
    let mut zxids = Vec::new();
    let invoke_ns = sh.ns();
    let run = workload::exec(sh.cfg.workload, conn, &step, st, &mut zxids);
    let done = match kick {
        Some(k) => tokio::select! {
            // In order, never at random: a seeded simulation must replay (docs/sim.md).
            biased;
            d = run => d,
            _ = k.notified() => Done {
                outcome: if step.call.is_write() { Outcome::Unknown } else { Outcome::Fail },
                ret: Ret::None,
                error: Some("the client dropped the connection (nemesis)".into()),
                effects: Vec::new(),
                end_session: true,
            },
        },
        None => run.await,
    };
    let op = Op {
        id: 0,
        process,
        worker: w,
        session: conn.session(),
        node: conn.node,
        key: step.key,
        call: step.call,
        outcome: done.outcome,
        ret: done.ret,
        error: done.error,
        zxid: zxids.last().copied(),
        zxids,
        invoke_ns,
        complete_ns: sh.ns(),
        effects: if done.outcome == Outcome::Ok { done.effects } else { Vec::new() },
        final_phase: false,
    };
    let end = done.end_session || op.outcome == Outcome::Unknown;
    (op, end)
}

/// Worker `w`'s main phase.
pub async fn run(sh: Arc<Shared>, w: usize) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(sh.cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(w as u64));
    let mut st = WorkerState { worker: w, ..Default::default() };
    let mut process = w as u64;
    let mut conn: Option<Conn> = None;
    let mut ops = Vec::new();
    // Spread the ops over the main phase, so that the nemesis's windows fall among them: a
    // pause before each op of 0..2x the mean gap (drawn from a generator of its own, so the
    // ops drawn do not depend on it).
    let gap_us = (sh.cfg.duration.as_micros() as u64 * sh.cfg.clients as u64 / sh.cfg.ops.max(1) as u64).min(200_000);
    let mut pacing = ChaCha8Rng::seed_from_u64(rng.gen());
    while Instant::now() < sh.deadline {
        tokio::time::sleep(Duration::from_micros(pacing.gen_range(0..=gap_us))).await;
        if sh.left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_err() {
            break;
        }
        if conn.is_none() {
            conn = connect(&sh, &mut rng, sh.deadline).await;
        }
        let Some(c) = conn.as_ref() else { break };
        let step = workload::next(&sh.cfg, &mut rng, &mut st);
        let (op, end) = invoke(&sh, c, process, w, step, &mut st, sh.kicks.get(w)).await;
        ops.push(op);
        if let Some(p) = &sh.cfg.progress {
            p.fetch_add(1, Ordering::Relaxed);
        }
        if end {
            conn = None;
            st.session_lost();
            process = sh.next_process.fetch_add(1, Ordering::SeqCst);
        }
    }
    ops
}
