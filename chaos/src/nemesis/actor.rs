//! Carrying out the schedule: each window's fault started, held, and undone, on whatever the
//! target lets us control: the embedded cluster (every nemesis), testkeeper admin endpoints
//! (the fault rules and session expiry), and always the clients' own connections.

use std::sync::Arc;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::net::mem::LinkFaults;
use testkeeper_server::http::client::AdminClient;
use tokio::sync::{watch, Notify};

use super::{bridge, rule, shuffled, victim, Window};
use crate::config::Nemesis;
use crate::history::NemesisEvent;

/// A clock step drawn from `pick`: 1 s to 10 min, ahead or behind.
pub fn jump_ms(pick: u64) -> i64 {
    let ms = 1_000 + (pick >> 1) % 599_000;
    if pick & 1 == 0 {
        ms as i64
    } else {
        -(ms as i64)
    }
}

/// Every directed link between `n` nodes.
fn every_link(n: usize) -> Vec<(u64, u64)> {
    (1..=n as u64).flat_map(|x| (1..=n as u64).map(move |y| (x, y))).filter(|(x, y)| x != y).collect()
}

/// What the nemesis can reach.
pub enum Control {
    /// The embedded cluster, owned by the nemesis for the main phase.
    Cluster(TestKeeperCluster),
    /// testkeeper admin endpoints of an external target.
    Admin(Vec<AdminClient>),
    /// Nothing on the server side: client-side faults only.
    Plain,
}

/// How to undo a started fault.
enum Undo {
    Restart(u64),
    RestartAll(Vec<u64>),
    Resume(u64),
    Heal,
    Links(Vec<(u64, u64)>),
    /// Flip the bit at this offset of the node's disk back, and start it.
    Repair(u64, usize),
    /// Step this node's wall clock back by this much.
    Unjump(u64, i64),
    /// Empty this node's disk, and restart the node if the full disk stopped it.
    Empty(u64),
    ClearRules,
    RemoveRules(Vec<(usize, u64)>),
    Nothing,
}

/// A node that did not come back when the run healed everything.
#[derive(Debug)]
pub struct HealError {
    pub node: u64,
    pub source: std::io::Error,
}

impl std::fmt::Display for HealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "restarting node {}: {}", self.node, self.source)
    }
}

impl std::error::Error for HealError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The nemesis.
pub struct Actor {
    pub control: Control,
    /// One per client worker: a notification drops its connection mid-request.
    pub kicks: Arc<Vec<Notify>>,
}

impl Actor {
    fn nodes(&self) -> usize {
        match &self.control {
            Control::Cluster(c) => c.ids().len(),
            _ => 0,
        }
    }

    /// Starts `w`'s fault; returns what it did and how to undo it.
    async fn start(&mut self, w: &Window) -> Result<(String, Undo), String> {
        let n = self.nodes();
        let node = victim(n, w.pick);
        if w.nemesis == Nemesis::Disconnect {
            let mut rng = ChaCha8Rng::seed_from_u64(w.pick);
            let cut: Vec<usize> = (0..self.kicks.len()).filter(|_| rng.gen_bool(0.5)).collect();
            let cut = if cut.is_empty() { vec![(w.pick % self.kicks.len().max(1) as u64) as usize] } else { cut };
            for &i in &cut {
                if let Some(k) = self.kicks.get(i) {
                    k.notify_one();
                }
            }
            return Ok((format!("workers {cut:?} drop their connections"), Undo::Nothing));
        }
        match &mut self.control {
            Control::Plain => Err(format!("{} needs --admin or the embedded cluster", w.nemesis)),
            Control::Admin(admins) => {
                if w.nemesis == Nemesis::ExpireSession {
                    return expire_over_http(admins, w.pick).await.map(|d| (d, Undo::Nothing));
                }
                let text = rule(w.nemesis).ok_or_else(|| format!("{} needs the embedded cluster", w.nemesis))?;
                let mut ids = Vec::new();
                for (i, a) in admins.iter().enumerate() {
                    let body =
                        a.request("POST", "/api/v1/faults", "text/plain", text).await.map_err(|e| e.to_string())?;
                    let v: Value =
                        serde_json::from_str(&body).map_err(|e| format!("POST faults answered {body:?}: {e}"))?;
                    ids.push((i, v["id"].as_u64().unwrap_or(0)));
                }
                Ok((format!("{text} on {} servers", admins.len()), Undo::RemoveRules(ids)))
            }
            Control::Cluster(c) => Ok(match w.nemesis {
                Nemesis::Kill => {
                    c.kill(node).await;
                    (format!("killed node {node}"), Undo::Restart(node))
                }
                Nemesis::LoseTail => {
                    c.crash(node, true).await;
                    (format!("killed node {node}, its unsynced tail lost"), Undo::Restart(node))
                }
                Nemesis::CrashAll => {
                    let ids = c.ids();
                    for &id in &ids {
                        c.crash(id, true).await;
                    }
                    ("killed every node, their unsynced tails lost".to_string(), Undo::RestartAll(ids))
                }
                Nemesis::KillLeader => {
                    let leader = c.leader().unwrap_or(node);
                    c.kill(leader).await;
                    (format!("killed node {leader}, the leader"), Undo::Restart(leader))
                }
                Nemesis::Pause => {
                    c.pause(node);
                    (format!("paused node {node}"), Undo::Resume(node))
                }
                Nemesis::PartitionIsolate => {
                    c.isolate(node);
                    (format!("isolated node {node}"), Undo::Heal)
                }
                Nemesis::PartitionHalves => {
                    let ids = shuffled(n, w.pick);
                    let (a, b) = ids.split_at(n / 2);
                    c.partition(&[a, b]);
                    (format!("cut {a:?} | {b:?}"), Undo::Heal)
                }
                Nemesis::PartitionBridge => {
                    let (br, a, b) = bridge(n, w.pick);
                    let cut: Vec<(u64, u64)> =
                        (a.iter()).flat_map(|x| b.iter().flat_map(move |y| [(*x, *y), (*y, *x)])).collect();
                    for &(x, y) in &cut {
                        c.set_link(x, y, LinkFaults { drop: 1.0, ..Default::default() });
                    }
                    (format!("cut {a:?} | {b:?}, node {br} bridges"), Undo::Links(cut))
                }
                Nemesis::SlowLinks => {
                    let all = every_link(n);
                    for &(x, y) in &all {
                        c.set_link(x, y, LinkFaults { delay_ms: 20, jitter_ms: 40, ..Default::default() });
                    }
                    ("every link slowed".to_string(), Undo::Links(all))
                }
                Nemesis::LossyLinks => {
                    let all = every_link(n);
                    let f = LinkFaults { drop: 0.2, duplicate: 0.2, jitter_ms: 10, ..Default::default() };
                    for &(x, y) in &all {
                        c.set_link(x, y, f);
                    }
                    ("every link loses, duplicates and reorders messages".to_string(), Undo::Links(all))
                }
                Nemesis::CorruptDisk => {
                    let (flipped, started) =
                        c.corrupt_disk(node, w.pick).await.map_err(|e| format!("corrupting node {node}: {e}"))?;
                    match (flipped, started) {
                        (None, _) => (format!("node {node}'s log is too short to corrupt"), Undo::Nothing),
                        (Some(at), Err(e)) => (
                            format!("node {node}: bit flipped at byte {at}; start refused: {e}"),
                            Undo::Repair(node, at),
                        ),
                        // Served from a disk it should have refused: the checkers judge what it
                        // served, and the repair (a restart) follows at the window's end.
                        (Some(at), Ok(())) => (
                            format!("node {node}: bit flipped at byte {at}; NOT DETECTED, the node started"),
                            Undo::Repair(node, at),
                        ),
                    }
                }
                Nemesis::DiskFull => {
                    if c.fill_disk(node, true) {
                        (format!("node {node}'s disk is full"), Undo::Empty(node))
                    } else {
                        (format!("node {node} has no simulated disk to fill"), Undo::Nothing)
                    }
                }
                Nemesis::ClockJump => {
                    let ms = jump_ms(w.pick);
                    if c.jump_clock(node, ms) {
                        (format!("node {node}'s wall clock stepped {:+.1} s", ms as f64 / 1e3), Undo::Unjump(node, ms))
                    } else {
                        ("no simulated clock to step (only `testkeeper sim` has one)".to_string(), Undo::Nothing)
                    }
                }
                Nemesis::ExpireSession => {
                    let sessions = c.sessions();
                    if sessions.is_empty() {
                        ("no live session to expire".to_string(), Undo::Nothing)
                    } else {
                        let id = sessions[(w.pick % sessions.len() as u64) as usize];
                        let done = c.expire_session(id);
                        (
                            format!("expired session {id:#x}{}", if done { "" } else { " (no node could)" }),
                            Undo::Nothing,
                        )
                    }
                }
                other => {
                    let text = rule(other).expect("every other nemesis is a fault rule");
                    for id in c.ids() {
                        if c.node(id).is_some() {
                            c.add_fault(id, text).map_err(|e| e.to_string())?;
                        }
                    }
                    (format!("{text} on every running node"), Undo::ClearRules)
                }
            }),
        }
    }

    async fn undo(&mut self, undo: Undo) -> Result<(), String> {
        match (&mut self.control, undo) {
            (_, Undo::Nothing) => Ok(()),
            (Control::Cluster(c), Undo::Restart(id)) => {
                c.restart(id).await.map_err(|e| format!("restarting node {id}: {e}"))
            }
            (Control::Cluster(c), Undo::RestartAll(ids)) => {
                for id in ids {
                    c.restart(id).await.map_err(|e| format!("restarting node {id}: {e}"))?;
                }
                Ok(())
            }
            (Control::Cluster(c), Undo::Resume(id)) => {
                c.resume(id);
                Ok(())
            }
            (Control::Cluster(c), Undo::Heal) => {
                c.heal();
                Ok(())
            }
            (Control::Cluster(c), Undo::Links(links)) => {
                for (x, y) in links {
                    c.clear_link(x, y);
                }
                Ok(())
            }
            (Control::Cluster(c), Undo::Empty(id)) => {
                c.fill_disk(id, false);
                if c.stopped(id) {
                    c.restart(id).await.map_err(|e| format!("restarting node {id} after its disk filled: {e}"))?;
                }
                Ok(())
            }
            (Control::Cluster(c), Undo::Unjump(id, ms)) => {
                c.jump_clock(id, -ms);
                Ok(())
            }
            (Control::Cluster(c), Undo::Repair(id, at)) => {
                c.repair_disk(id, at).await.map_err(|e| format!("restarting node {id} on its repaired disk: {e}"))
            }
            (Control::Cluster(c), Undo::ClearRules) => {
                for id in c.ids() {
                    c.clear_faults(id);
                }
                Ok(())
            }
            (Control::Admin(admins), Undo::RemoveRules(ids)) => {
                for (i, id) in ids {
                    let path = format!("/api/v1/faults/{id}");
                    admins[i].request("DELETE", &path, "text/plain", "").await.map_err(|e| e.to_string())?;
                }
                Ok(())
            }
            _ => Err("an undo that does not fit the target".into()),
        }
    }

    /// Carries out `plan` from `start` until `stop` is set; returns what it did.
    pub async fn run(&mut self, plan: &[Window], start: Instant, mut stop: watch::Receiver<bool>) -> Vec<NemesisEvent> {
        let ns = |t: Instant| t.saturating_duration_since(start).as_nanos() as u64;
        let mut events = Vec::new();
        for w in plan {
            let at = start + Duration::from_millis(w.at_ms);
            if *stop.borrow() || wait(at, &mut stop).await {
                break;
            }
            let begun = Instant::now();
            let (detail, undo) = match self.start(w).await {
                Ok(x) => x,
                Err(e) => (format!("could not start: {e}"), Undo::Nothing),
            };
            wait(Instant::now() + Duration::from_millis(w.len_ms), &mut stop).await;
            let detail = match self.undo(undo).await {
                Ok(()) => detail,
                Err(e) => format!("{detail}; undo failed: {e}"),
            };
            let end = Some(ns(Instant::now()));
            events.push(NemesisEvent { kind: w.nemesis.name().into(), detail, start_ns: ns(begun), end_ns: end });
        }
        events
    }

    /// Undoes everything that may still be in force: every node running and resumed, the
    /// network whole, no fault rules.
    ///
    /// # Errors
    /// A node does not restart.
    pub async fn heal_all(&mut self) -> Result<(), HealError> {
        if let Control::Cluster(c) = &mut self.control {
            c.heal();
            let ids = c.ids();
            for &x in &ids {
                c.resume(x);
                c.clear_faults(x);
                for &y in &ids {
                    c.set_link(x, y, LinkFaults::default());
                }
                if c.node(x).is_none() {
                    c.restart(x).await.map_err(|source| HealError { node: x, source })?;
                }
            }
        }
        Ok(())
    }
}

/// Waits until `at`; true when `stop` was set first.
async fn wait(at: Instant, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        // In order, never at random: a seeded simulation must replay (docs/sim.md).
        biased;
        _ = tokio::time::sleep_until(at) => false,
        _ = stop.wait_for(|s| *s) => true,
    }
}

/// Expires the `pick`-th live session of the first admin endpoint.
async fn expire_over_http(admins: &[AdminClient], pick: u64) -> Result<String, String> {
    let a = admins.first().ok_or("no admin endpoint")?;
    let body = a.request("GET", "/api/v1/sessions", "text/plain", "").await.map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("GET sessions answered {body:?}: {e}"))?;
    let ids: Vec<String> =
        (v["sessions"].as_array().into_iter().flatten()).filter_map(|s| s["id"].as_str().map(str::to_string)).collect();
    let Some(id) = ids.get((pick % ids.len().max(1) as u64) as usize) else {
        return Ok("no live session to expire".into());
    };
    a.request("POST", &format!("/api/v1/sessions/{id}/expire"), "text/plain", "").await.map_err(|e| e.to_string())?;
    Ok(format!("expired session {id}"))
}
