//! The chaos sweep: replay one publication against a fresh embedded testkeeper once per
//! request index i of the publisher's first session, dropping the reply to request i
//! (`drop-response:session=<publisher>,nth=i`), plus seeded random drops and expiries on the
//! simulated hosts' sessions; check the invariants (`check`) after every run.
//!
//! With [`Remote`] the runs go to a running server instead: rules are installed, read back and
//! removed through its HTTP admin API (`admin`), each run under a root path of its own.
//!
//! A run's faults depend only on (seed, i), so a violation is replayed by its seed and index.
//! Tap rules (`delay:ms=0` on the row, the queue and the generations) are added after the
//! fault rules, so they never pre-empt them, and make the server log every such mutation.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_server::faults::FaultEvent;

use crate::admin::Admin;
use crate::check::{check, observe};
use crate::hosts::{host_id, Behavior, Hosts};
use crate::keepermap::TableLayout;
use crate::link::{Breakage, Link};
use crate::report::Report;
use crate::{run, Config};

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub hosts: usize,
    pub seed: u64,
    pub breakage: Option<Breakage>,
    /// Stop after this many faulted runs (all request indexes when `None`).
    pub max_runs: Option<usize>,
    /// Sweep a running server through its HTTP admin API instead of embedded ones.
    pub remote: Option<Remote>,
    /// Run only this request index (a replay of one run), without the baseline.
    pub only: Option<usize>,
}

/// A running server and its admin endpoint.
#[derive(Debug, Clone)]
pub struct Remote {
    pub addr: SocketAddr,
    pub admin: Admin,
    /// Every run's nodes live under `<root>/s<seed>-i<index>`.
    pub root: String,
}

impl Remote {
    /// `root` is unique per call (pid and clock), so sweeps sharing a server stay apart.
    pub fn new(addr: SocketAddr, admin: Admin) -> Remote {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Remote { addr, admin, root: format!("/testkeeper_chaos/p{}-t{nanos}", std::process::id()) }
    }
}

/// One run's result.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The dropped request index (0: the fault-free baseline).
    pub index: usize,
    pub faults: Vec<String>,
    pub outcome: String,
    pub fired: usize,
    /// The request the sweep's drop hit (`create /path`), when it fired.
    pub hit: Option<String>,
    /// The faults that fired, in words (`drop-response on create /path (publisher)`); taps
    /// are left out.
    pub fired_faults: Vec<String>,
    pub violations: Vec<String>,
}

/// The whole sweep.
#[derive(Debug, Clone, Default)]
pub struct SweepReport {
    pub seed: u64,
    pub runs: Vec<RunResult>,
}

impl SweepReport {
    /// Runs by outcome.
    pub fn outcomes(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for r in &self.runs {
            *m.entry(r.outcome.clone()).or_default() += 1;
        }
        m
    }

    /// The runs with violations.
    pub fn failures(&self) -> Vec<&RunResult> {
        self.runs.iter().filter(|r| !r.violations.is_empty()).collect()
    }
}

/// The publication config the sweep uses (short evidence wait: dead hosts are expected).
pub fn sweep_publication(hosts: usize, seed: u64) -> Config {
    let mut c = Config::new("db.events", hosts, seed);
    c.evidence_timeout = Duration::from_millis(1500);
    c
}

/// Runs the baseline, then one run per request index of the baseline's first session.
///
/// # Errors
/// When the embedded server cannot start.
pub async fn sweep(cfg: &SweepConfig) -> std::io::Result<SweepReport> {
    sweep_with(cfg, |_, _| {}).await
}

/// [`sweep`], calling `on_run(run, runs in all)` as each run finishes (for progress).
///
/// # Errors
/// As [`sweep`].
pub async fn sweep_with(cfg: &SweepConfig, mut on_run: impl FnMut(&RunResult, usize)) -> std::io::Result<SweepReport> {
    let mut out = SweepReport { seed: cfg.seed, runs: Vec::new() };
    if let Some(i) = cfg.only {
        let (run, _) = one_run(cfg, i).await?;
        on_run(&run, 1);
        out.runs.push(run);
        return Ok(out);
    }
    let (base, requests) = one_run(cfg, 0).await?;
    let last = cfg.max_runs.map_or(requests, |m| m.min(requests));
    on_run(&base, last + 1);
    out.runs.push(base);
    for i in 1..=last {
        let run = one_run(cfg, i).await?.0;
        on_run(&run, last + 1);
        out.runs.push(run);
    }
    Ok(out)
}

/// One run with request `index` of the publisher's first session dropped (0: none). Returns
/// the result and how many requests that first session sent.
///
/// # Errors
/// When the embedded server cannot start, or the remote one's admin endpoint fails.
pub async fn one_run(cfg: &SweepConfig, index: usize) -> std::io::Result<(RunResult, usize)> {
    let pubcfg = sweep_publication(cfg.hosts, cfg.seed);
    let Some(remote) = &cfg.remote else {
        let mut scfg = ServerConfig::new(Flavor::Keeper);
        scfg.listen = "127.0.0.1:0".parse().expect("loopback");
        scfg.seed = cfg.seed ^ (index as u64).wrapping_mul(0x9e37_79b9);
        let server = TestKeeper::start(scfg).await?;
        let out = faulted_run(cfg, index, server.addr(), pubcfg, &Control::Embedded(&server)).await;
        server.shutdown().await;
        return out;
    };
    // A shared server keeps every run's nodes: each run gets a root of its own, so no run
    // sees another's row, queue or generations, and its path-matched taps see only its own.
    let root = format!("{}/s{}-i{index}", remote.root, cfg.seed);
    let mut pubcfg = pubcfg;
    pubcfg.keeper_map_prefix = format!("{root}/keeper_map_tables");
    pubcfg.ddl_queue = format!("{root}/ddl");
    pubcfg.sim_root = format!("{root}/sim");
    faulted_run(cfg, index, remote.addr, pubcfg, &Control::Http(&remote.admin)).await
}

/// Where the faults are installed and read back.
enum Control<'a> {
    Embedded(&'a TestKeeper),
    Http(&'a Admin),
}

impl Control<'_> {
    async fn add(&self, rule: &str) -> Result<u64, String> {
        match self {
            Control::Embedded(s) => s.add_fault(rule).map_err(|e| e.to_string()),
            Control::Http(a) => a.add_fault(rule).await.map_err(|e| e.to_string()),
        }
    }

    /// The events of the rules `ids` (a shared server also logs other clients' rules).
    async fn events(&self, ids: &[u64]) -> Result<Vec<FaultEvent>, String> {
        let all = match self {
            Control::Embedded(s) => s.fault_events(),
            Control::Http(a) => a.events().await.map_err(|e| e.to_string())?,
        };
        Ok(all.into_iter().filter(|e| ids.contains(&e.rule)).collect())
    }

    /// Removes the rules `ids` (an embedded server is shut down with its rules instead).
    async fn remove(&self, ids: &[u64]) -> Result<(), String> {
        if let Control::Http(a) = self {
            for id in ids {
                a.remove_fault(*id).await.map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}

async fn faulted_run(
    cfg: &SweepConfig,
    index: usize,
    addr: SocketAddr,
    pubcfg: Config,
    control: &Control<'_>,
) -> std::io::Result<(RunResult, usize)> {
    let io = std::io::Error::other;
    let hosts = Hosts::start(addr, &pubcfg.ddl_queue, &pubcfg.sim_root, vec![Behavior::Succeed; cfg.hosts])
        .await
        .map_err(|e| io(e.to_string()))?;
    let mut link = Link::connect(addr).await.map_err(|e| io(e.to_string()))?;
    link.breakage = cfg.breakage;
    let mut faults = Vec::new();
    if index > 0 {
        faults.push(format!("drop-response:session={:#x},nth={index},count=1", link.session_id()));
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(index as u64));
        for kind in ["drop-response", "expire-session"] {
            if rng.gen_bool(0.25) && !hosts.sessions.is_empty() {
                let s = hosts.sessions[rng.gen_range(0..hosts.sessions.len())];
                faults.push(format!("{kind}:session={s:#x},nth={},count=1", rng.gen_range(1..12)));
            }
        }
    }
    let row = TableLayout::new(&pubcfg.keeper_map_prefix, &pubcfg.table).row_path(&pubcfg.target);
    let taps = [
        format!("delay:ms=0,op=setData|create|delete|multi,path={row}"),
        format!("delay:ms=0,op=create,path={}/*", pubcfg.ddl_queue),
        format!("delay:ms=0,op=delete,path={}/generations/*", pubcfg.sim_root),
    ];
    let mut ids = Vec::new();
    for rule in faults.iter().chain(taps.iter()) {
        ids.push(control.add(rule).await.map_err(io)?);
    }
    let report: Report = run::publish(&mut link, &pubcfg).await;
    let requests = report.journal.iter().filter(|s| Some(&s.session) == link.sessions.first()).count();
    let events = control.events(&ids).await;
    hosts.stop();
    control.remove(&ids).await.map_err(io)?;
    let events = events.map_err(io)?;
    let names: Vec<String> = (0..cfg.hosts).map(host_id).collect();
    let mut violations = Vec::new();
    match Link::connect(addr).await {
        Ok(mut reader) => match observe(&mut reader, &report, &pubcfg.ddl_queue, &pubcfg.sim_root, &names).await {
            Ok(o) => violations = check(&report, &events, &o, &pubcfg.ddl_queue, &pubcfg.sim_root, &link.sessions),
            Err(e) => violations.push(format!("cannot observe the tree: {e}")),
        },
        Err(e) => violations.push(format!("cannot observe the tree: {e}")),
    }
    let fired_events: Vec<&FaultEvent> =
        events.iter().filter(|e| !e.tap && !taps_ids(&ids, faults.len()).contains(&e.rule)).collect();
    let fired = fired_events.len();
    let role = |session: i64| match hosts.sessions.iter().position(|s| *s == session) {
        Some(h) => format!("host {}", host_id(h).split(':').next().unwrap_or_default()),
        None if link.sessions.contains(&session) => "publisher".to_string(),
        None => format!("session {session:#x}"),
    };
    let fired_faults = fired_events
        .iter()
        .map(|e| {
            format!(
                "{} on {}{} ({})",
                e.kind,
                e.op,
                e.path.as_deref().map(|p| format!(" {p}")).unwrap_or_default(),
                role(e.session)
            )
        })
        .collect();
    let hit = (index > 0)
        .then(|| events.iter().find(|e| e.rule == ids[0]))
        .flatten()
        .map(|e| format!("{}{}", e.op, e.path.as_deref().map(|p| format!(" {p}")).unwrap_or_default()));
    let outcome = report.outcome.map_or("none".into(), |o| {
        serde_json::to_value(o).map(|v| v.as_str().unwrap_or("?").to_string()).unwrap_or_default()
    });
    Ok((RunResult { index, faults, outcome, fired, hit, fired_faults, violations }, requests))
}

/// The ids of the tap rules: they come after the `n_faults` fault rules.
fn taps_ids(ids: &[u64], n_faults: usize) -> &[u64] {
    &ids[n_faults.min(ids.len())..]
}
