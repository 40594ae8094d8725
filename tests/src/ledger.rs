//! A client writes a ledger to a cluster while the test kills and restarts the leader in a
//! loop; then every acknowledged write is checked on every node, and every node's digest is
//! compared at the same applied index (sampled all along, and once more at the end).
//!
//! The client is a program that speaks the protocol of tests/kazoo/cluster_ledger.py (kazoo)
//! and tests/java/ClusterLedger.java (Apache ZooKeeper's Java client). The loop is sized by
//! rounds and acknowledgements, never by wall time: each step waits for the client to finish
//! `acks_per_step` more writes, so every kill lands while the client writes and the next
//! writes are served by the new leader.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::cluster_control::{ClusterControl, DigestLedger};
use crate::piped::PipedChild;

/// Bound on one step of the loop (a number of acknowledgements) and on each phase of the end.
const STEP_WAIT: Duration = Duration::from_secs(60);
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// How many times to kill the leader, and how far the client must get between steps.
#[derive(Debug, Clone, Copy)]
pub struct KillLoop {
    pub rounds: usize,
    pub acks_per_step: usize,
    /// Orders the connect string (the clients try servers in order).
    pub seed: u64,
}

/// What a run saw.
#[derive(Debug, Default)]
pub struct LedgerReport {
    /// The session the client started with, and the one it ended with (`0x..`).
    pub start_session: String,
    pub final_session: String,
    /// Every connection state the client reported, in order (`state S session=0x..`).
    pub states: Vec<String>,
    /// Acknowledged writes: path and data.
    pub acked: Vec<(String, String)>,
    pub retries: u64,
    /// The leaders killed, in order.
    pub killed: Vec<u64>,
    /// Per node at the end: the ephemeral the client made at its start, with its owner, if
    /// the node has it.
    pub ephemeral_owner: BTreeMap<u64, Option<i64>>,
    /// Digest samples taken and indexes compared across nodes; the common index at the end.
    pub digest_samples: usize,
    pub digest_compared: usize,
    pub converged_at: u64,
}

impl LedgerReport {
    /// The distinct sessions the client's state lines named, in order of appearance.
    pub fn sessions(&self) -> Vec<String> {
        let mut out: Vec<String> = vec![self.start_session.clone()];
        for s in &self.states {
            if let Some(id) = s.split_whitespace().find_map(|w| w.strip_prefix("session=")) {
                if id != "0x0" && !out.iter().any(|o| o == id) {
                    out.push(id.to_string());
                }
            }
        }
        out
    }
}

/// The client being driven, and what it has said so far.
struct Driven<'a> {
    label: &'a str,
    child: PipedChild,
    acked: usize,
    /// `mark` lines sent (see [`Driven::fence`]).
    marks: usize,
    report: LedgerReport,
    digests: DigestLedger,
}

impl Driven<'_> {
    /// Waits for `n` more acknowledged writes, sampling every node's digest meanwhile.
    fn step(&mut self, c: &mut dyn ClusterControl, n: usize, what: &str) -> Result<(), String> {
        let target = self.acked + n;
        let until = Instant::now() + STEP_WAIT;
        let mut next_sample = Instant::now();
        while self.acked < target {
            if let Some(l) = self.child.next_line(Duration::from_millis(50))? {
                self.take(l)?;
            }
            if Instant::now() >= next_sample {
                self.digests.sample(c)?;
                next_sample = Instant::now() + SAMPLE_EVERY;
            }
            if Instant::now() > until {
                return Err(format!(
                    "{}: stuck at {} acknowledged writes ({what}), wanted {target}\nclient:\n{}\n{}",
                    self.label,
                    self.acked,
                    self.child.log_tail(30),
                    c.describe()
                ));
            }
        }
        Ok(())
    }

    /// Counts an `acked N` line, keeps a `state` line (anything else is not the loop's).
    fn take(&mut self, l: String) -> Result<(), String> {
        if let Some(n) = l.strip_prefix("acked ") {
            self.acked = n.parse().map_err(|e| format!("bad line {l:?}: {e}"))?;
        } else if l.starts_with("state ") {
            self.report.states.push(l);
        }
        Ok(())
    }

    /// Reads everything the client printed before it read `mark N` from stdin (sent now), so
    /// that the next step counts only writes the client finished after this point. Without
    /// it, acknowledgements still in the pipe from before a kill satisfy the step after it:
    /// the loop then kills the next leader while the client is still reconnecting from the
    /// last kill, and the client reports one disconnect for both.
    fn fence(&mut self, what: &str) -> Result<usize, String> {
        self.marks += 1;
        let mark = format!("mark {}", self.marks);
        self.child.send(&mark)?;
        let before = self.acked;
        let lines = (self.child.read_until(STEP_WAIT, |l| l == mark))
            .map_err(|e| format!("{}: no {mark:?} echoed ({what}): {e}", self.label))?;
        for l in lines {
            self.take(l)?;
        }
        Ok(self.acked - before)
    }

    /// Stops the writes and reads the client's ledger.
    fn finish(&mut self) -> Result<(), String> {
        self.child.send("stop")?;
        let tail = self.child.read_until(STEP_WAIT, |l| l == "ready")?;
        for l in &tail {
            if let Some(rest) = l.strip_prefix("final ") {
                self.report.final_session = session_of(l);
                self.report.retries =
                    rest.split_whitespace().find_map(|w| w.strip_prefix("retries=")?.parse().ok()).unwrap_or(0);
            } else if let Some(rest) = l.strip_prefix("ack ") {
                let (p, d) = rest.split_once(' ').ok_or_else(|| format!("bad line {l:?}"))?;
                self.report.acked.push((p.to_string(), d.to_string()));
            } else if l.starts_with("state ") {
                self.report.states.push(l.clone());
            }
        }
        if self.report.acked.is_empty() || self.report.final_session.is_empty() {
            return Err(format!("{}: no final ledger in {tail:?}", self.label));
        }
        Ok(())
    }
}

/// Runs `client CONNECT` (its label names it in messages) under `plan` against `c`.
///
/// # Errors
/// The client fails or stalls, an acknowledged write is missing or wrong on some node, a
/// node has a write nobody acknowledged, or two nodes' digests differ at one index.
pub fn run(
    c: &mut dyn ClusterControl,
    label: &str,
    client: &mut Command,
    plan: KillLoop,
) -> Result<LedgerReport, String> {
    let mut order = c.ids();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(plan.seed));
    let connect = c.connect_string_in(&order);
    eprintln!("{label}: connect string {connect} (order {order:?} from seed {})", plan.seed);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let child = PipedChild::spawn(label, client.arg(&connect), &dir.path().join("client.log"))?;
    let mut d =
        Driven { label, child, acked: 0, marks: 0, report: LedgerReport::default(), digests: DigestLedger::default() };
    let first = d.child.read_until(STEP_WAIT, |l| l.starts_with("start "))?;
    d.report.states.extend(first.iter().filter(|l| l.starts_with("state ")).cloned());
    d.report.start_session = session_of(first.last().expect("one line"));
    for round in 0..plan.rounds {
        d.step(c, plan.acks_per_step, "before a kill")?;
        let leader = c.await_leader(STEP_WAIT)?;
        eprintln!("{label}: round {round}: killing leader {leader} at {} acknowledged writes", d.acked);
        c.kill(leader);
        d.report.killed.push(leader);
        let late = d.fence("after the kill")?;
        eprintln!("{label}: round {round}: {late} acknowledgements were still in the pipe at the kill");
        d.step(c, plan.acks_per_step, "after the kill")?;
        c.restart(leader)?;
        d.fence("after the restart")?;
        d.step(c, plan.acks_per_step, "after the restart")?;
    }
    d.finish()?;
    c.await_leader(STEP_WAIT)?;
    d.report.converged_at = d.digests.converge(c, STEP_WAIT)?.0;
    let session = i64::from_str_radix(d.report.start_session.trim_start_matches("0x"), 16).unwrap_or(0);
    for id in c.ids() {
        let owner = check_node(c.addr(id), &d.report.acked, session).map_err(|e| format!("{label}: node {id}: {e}"))?;
        d.report.ephemeral_owner.insert(id, owner);
    }
    (d.report.digest_samples, d.report.digest_compared) = (d.digests.samples, d.digests.compared);
    d.child.send("close")?;
    d.child.read_until(STEP_WAIT, |l| l == "ok")?;
    match d.child.wait_exit(STEP_WAIT) {
        Some(st) if st.success() => {}
        other => return Err(format!("{label}: exited {other:?}:\n{}", d.child.log_tail(30))),
    }
    let r = d.report;
    eprintln!(
        "{label}: {} writes acknowledged ({} retries) over {} leader kills {:?}; sessions {:?}; \
         digests equal at every shared index ({} samples, {} cross-node comparisons), all at index {}",
        r.acked.len(),
        r.retries,
        r.killed.len(),
        r.killed,
        r.sessions(),
        r.digest_samples,
        r.digest_compared,
        r.converged_at
    );
    Ok(r)
}

fn session_of(line: &str) -> String {
    line.split_whitespace().find_map(|w| w.strip_prefix("session=")).unwrap_or_default().to_string()
}

/// Reads the ledger on one node after a sync: exactly the acknowledged writes, each with its
/// data. Returns the owner of the client's ephemeral there, if the node has it.
fn check_node(addr: std::net::SocketAddr, acked: &[(String, String)], session: i64) -> Result<Option<i64>, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let e = |what: &str, err: &dyn std::fmt::Display| format!("{what}: {err}");
        let zk = crate::cluster::connect_new_session(addr, STEP_WAIT).await.map_err(|x| e("connect", &x))?;
        zk.sync("/ledger").await.map_err(|x| e("sync", &x))?;
        let mut names = zk.get_children("/ledger", false).await.map_err(|x| e("children", &x))?;
        names.sort();
        let want: Vec<&str> = acked.iter().map(|(p, _)| p.trim_start_matches("/ledger/")).collect();
        if names != want {
            let missing: Vec<&&str> = want.iter().filter(|w| !names.iter().any(|n| n == *w)).collect();
            let extra: Vec<&String> = names.iter().filter(|n| !want.contains(&n.as_str())).collect();
            return Err(format!("ledger differs: missing {missing:?}, never acknowledged {extra:?}"));
        }
        for (path, data) in acked {
            let (got, _) = zk.get_data(path, false).await.map_err(|x| e(path, &x))?;
            if got != data.as_bytes() {
                return Err(format!("{path} holds {:?}, acknowledged {data:?}", String::from_utf8_lossy(&got)));
            }
        }
        let eph = format!("/ledger-eph-{session:x}");
        let owner = zk.exists(&eph, false).await.map_err(|x| e(&eph, &x))?.map(|st| st.ephemeral_owner);
        let _ = zk.close().await;
        Ok(owner)
    })
}
