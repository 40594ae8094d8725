//! Conformance suite (issues 5 and 15): runs a catalogue of scenarios against a
//! ZooKeeper-protocol server (or ensemble), writes normalized transcripts, diffs them against
//! a live reference server or a stored golden transcript, and reports (terminal, JSON, JUnit,
//! Markdown). The same normalization and known-differences table serve the cross-checking
//! proxy and replay (`proxy`, `replay`).
//!
//! # Layout
//! - `scenario`, `ops`, `acl_spec`: what a scenario, a step and an op are.
//! - `parse`: the scenario files' syntax (also the text form of ops in transcripts).
//! - `catalogue`: the scenario files (`conformance/scenarios/*.txt`) and the generated doc.
//! - `runner`, `sessions`, `probes`, `race`: running one scenario on one server or ensemble.
//! - `reply`, `transcript`: replies as JSON; the JSON-lines format and its normalization.
//! - `diff`, `expected`: comparing transcripts; the known Keeper/ZooKeeper differences.
//! - `report`: the report structure and its renderings.
//! - `proxy`, `replay`, `op_text`: the ZooKeeper-wire proxy that cross-checks real traffic
//!   against an oracle and records it, the replay of a recording against any server, and
//!   requests in the catalogue's text form.

mod acl_spec;
pub mod catalogue;
pub mod diff;
pub mod expected;
pub mod jsonl;
pub mod op_text;
pub mod ops;
pub mod parse;
mod probes;
pub mod proxy;
mod race;
pub mod replay;
pub mod reply;
pub mod report;
pub mod runner;
pub mod scenario;
mod sessions;
pub mod transcript;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::Acl;

pub use report::{Report, ScenarioResult, ServerInfo, Status};
use runner::RunCtx;
use scenario::{Scenario, Step};
use transcript::{Line, Meta};

/// A server or ensemble: the name it was given by and its nodes' addresses.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub name: String,
    pub nodes: Vec<SocketAddr>,
}

/// What to run and against what.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub target: Option<Endpoint>,
    pub reference: Option<Endpoint>,
    /// A golden transcript to compare with instead of a live reference.
    pub expect: Option<PathBuf>,
    /// The target's flavor (`keeper`/`zookeeper`); detected from its system nodes when unset.
    pub target_flavor: Option<String>,
    /// Where scenarios write; `/conformance-<random>` when unset.
    pub root: Option<String>,
    /// Run only scenarios that never write.
    pub read_only: bool,
    /// Run only scenarios whose name contains this.
    pub filter: Option<String>,
    /// Scenarios to run instead of the built-in catalogue (read from `--scenarios FILE`).
    pub scenarios: Option<Vec<Scenario>>,
    /// Bound on waiting for container and TTL collection (ZooKeeper checks every 60 s by
    /// default, `znode.container.checkIntervalMs`); 90 s when unset.
    pub collect_wait: Option<Duration>,
}

/// What the run reports as it goes.
pub enum Progress<'a> {
    /// Who is compared with whom, before the first scenario.
    Started { target: &'a ServerInfo, reference: Option<&'a ServerInfo>, root: &'a str, read_only: bool },
    /// Before the scenarios that wait for container or TTL collection, which run at once.
    Waiting { scenarios: usize, bound: Duration },
    /// One scenario's result.
    Scenario(&'a ScenarioResult),
}

/// Why the suite could not run (scenario failures are in the report, not errors).
#[derive(Debug)]
pub enum SuiteError {
    /// The config names no target.
    NoTarget,
    /// A server did not accept a session.
    Connect { addr: SocketAddr, source: ClientError },
    /// The run's root node could not be created on a server (and does not exist).
    Root { addr: SocketAddr, root: String },
    /// The golden transcript (`--expect`) cannot be read.
    Golden(jsonl::JsonlError),
}

impl std::fmt::Display for SuiteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SuiteError::NoTarget => f.write_str("no --target"),
            SuiteError::Connect { addr, source } => write!(f, "connect {addr}: {source}"),
            SuiteError::Root { addr, root } => write!(f, "cannot create the root {root} on {addr}"),
            SuiteError::Golden(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SuiteError {}

/// Runs the suite; `progress` sees the servers and then each scenario's result as it finishes.
///
/// # Errors
/// Connecting to a server or reading the golden file fails; scenario failures are in the
/// report, not errors.
pub async fn run(cfg: &Config, progress: &mut dyn FnMut(Progress<'_>)) -> Result<(Report, Vec<Line>), SuiteError> {
    let target = cfg.target.as_ref().ok_or(SuiteError::NoTarget)?;
    let root = cfg.root.clone().unwrap_or_else(|| format!("/conformance-{:016x}", rand::random::<u64>()));
    let target_info = server_info(target, cfg.target_flavor.clone()).await?;
    let (reference_info, golden) = match (&cfg.reference, &cfg.expect) {
        (Some(r), _) => (Some(server_info(r, None).await?), None),
        (None, Some(path)) => {
            let (meta, lines) = transcript::read_file(path).map_err(SuiteError::Golden)?;
            let info = ServerInfo { address: path.display().to_string(), flavor: meta.flavor, version: meta.server };
            let mut by: BTreeMap<String, Vec<Line>> = BTreeMap::new();
            lines.into_iter().for_each(|l| by.entry(l.scenario.clone()).or_default().push(l));
            (Some(info), Some(by))
        }
        (None, None) => (None, None),
    };
    progress(Progress::Started {
        target: &target_info,
        reference: reference_info.as_ref(),
        root: &root,
        read_only: cfg.read_only,
    });
    let flavors_differ = reference_info.as_ref().is_some_and(|r| r.flavor != target_info.flavor);
    let collect_wait = cfg.collect_wait.unwrap_or(Duration::from_secs(90));
    let t_ctx = RunCtx { nodes: target.nodes.clone(), collect_wait };
    let t_admin = Admin::open(target.nodes[0], &root, cfg.read_only).await?;
    let r_side = match &cfg.reference {
        Some(r) => Some((
            RunCtx { nodes: r.nodes.clone(), collect_wait },
            Admin::open(r.nodes[0], &root, cfg.read_only).await?,
        )),
        None => None,
    };
    let started = Instant::now();
    let catalogue = cfg.scenarios.clone().unwrap_or_else(catalogue::all);
    let env = Env {
        cfg,
        target,
        target_info: &target_info,
        reference_info: reference_info.as_ref(),
        t_ctx: &t_ctx,
        t_admin: &t_admin.client,
        r_side: r_side.as_ref().map(|(ctx, a)| (ctx, &a.client)),
        golden: golden.as_ref(),
        root: &root,
        flavors_differ,
    };
    let chosen: Vec<&Scenario> =
        catalogue.iter().filter(|sc| cfg.filter.as_ref().is_none_or(|f| sc.name.contains(f.as_str()))).collect();
    // Scenarios that wait for container or TTL collection spend most of their time waiting
    // (ZooKeeper's collector runs every `znode.container.checkIntervalMs`, 60 s by default):
    // they run all at once, each in its own subtree, before the others, and the user is told
    // what the wait is and how to shorten it.
    let waits = |sc: &Scenario| sc.steps.iter().any(|s| matches!(s, Step::WaitGone(..)));
    let slow: Vec<&Scenario> = chosen
        .iter()
        .copied()
        .filter(|sc| waits(sc) && skip_reason(cfg, sc, target, &target_info, reference_info.as_ref()).is_none())
        .collect();
    if !slow.is_empty() {
        progress(Progress::Waiting { scenarios: slow.len(), bound: collect_wait });
    }
    let mut done: BTreeMap<String, (ScenarioResult, Vec<Line>)> =
        futures::future::join_all(slow.iter().map(|sc| env.one(sc)))
            .await
            .into_iter()
            .map(|r| (r.0.name.clone(), r))
            .collect();
    let mut results = Vec::new();
    let mut all_lines = Vec::new();
    for sc in chosen {
        let (result, lines) = match done.remove(&sc.name) {
            Some(r) => r,
            None => env.one(sc).await,
        };
        progress(Progress::Scenario(&result));
        results.push(result);
        all_lines.extend(lines);
    }
    t_admin.finish().await;
    if let Some((_, a)) = r_side {
        a.finish().await;
    }
    let report = Report {
        target: target_info,
        reference: reference_info,
        root,
        read_only: cfg.read_only,
        duration_ms: started.elapsed().as_millis() as u64,
        scenarios: results,
    };
    Ok((report, all_lines))
}

/// What every scenario of one run shares.
struct Env<'a> {
    cfg: &'a Config,
    target: &'a Endpoint,
    target_info: &'a ServerInfo,
    reference_info: Option<&'a ServerInfo>,
    t_ctx: &'a RunCtx,
    t_admin: &'a Client,
    r_side: Option<(&'a RunCtx, &'a Client)>,
    golden: Option<&'a BTreeMap<String, Vec<Line>>>,
    root: &'a str,
    flavors_differ: bool,
}

impl Env<'_> {
    /// Runs one scenario on the target (and the reference, at the same time), and judges it.
    async fn one(&self, sc: &Scenario) -> (ScenarioResult, Vec<Line>) {
        let t0 = Instant::now();
        let mut result = ScenarioResult::new(sc);
        if let Some(why) = skip_reason(self.cfg, sc, self.target, self.target_info, self.reference_info) {
            result.status = Status::Skipped;
            result.skipped_because = Some(why);
            return (result, Vec::new());
        }
        let reference = async {
            match (self.r_side, self.golden) {
                (Some((ctx, a)), _) => {
                    let r = runner::run_scenario(ctx, a, self.root, sc).await;
                    Some((r.lines, r.problems.into_iter().map(|p| format!("reference: {p}")).collect()))
                }
                (None, Some(g)) => Some(match g.get(&sc.name) {
                    Some(lines) => (lines.clone(), Vec::new()),
                    None => (Vec::new(), vec!["the golden transcript has no lines for this scenario".to_string()]),
                }),
                (None, None) => None,
            }
        };
        let (run, reference) = tokio::join!(runner::run_scenario(self.t_ctx, self.t_admin, self.root, sc), reference);
        result.problems = run.problems;
        let reference_lines = reference.map(|(lines, problems)| {
            result.problems.extend(problems);
            lines
        });
        if let Some(reference) = &reference_lines {
            result.diffs = diff::diff(Some(&sc.name), &run.lines, reference, self.flavors_differ);
            if let Some(first) = result.diffs.iter().find(|d| !d.is_expected()) {
                let longer = if run.lines.len() > first.step { &run.lines } else { reference };
                result.reproduction = diff::reproduction(longer, first.step);
            }
        }
        result.status = Status::of(&result, reference_lines.is_some());
        result.duration_ms = t0.elapsed().as_millis() as u64;
        result.steps = run.lines.len();
        (result, run.lines)
    }
}

/// Why `sc` does not run in this configuration, if it does not.
fn skip_reason(
    cfg: &Config,
    sc: &Scenario,
    target: &Endpoint,
    target_info: &ServerInfo,
    reference: Option<&ServerInfo>,
) -> Option<String> {
    if cfg.read_only && !sc.read_only() {
        return Some("writes; the run is --read-only".into());
    }
    // Keeper's extension ops exist only there: skip them unless every side is Keeper.
    let not_keeper = [Some(target_info), reference].into_iter().flatten().find(|i| i.flavor != "keeper");
    if sc.keeper_only() {
        if let Some(i) = not_keeper {
            return Some(format!("uses Keeper-only ops; {} is {}", i.address, i.flavor));
        }
    }
    if sc.nodes > target.nodes.len() {
        return Some(format!("a cluster scenario: needs {} servers in --target, got {}", sc.nodes, target.nodes.len()));
    }
    None
}

/// The meta line for a transcript recorded from the target.
pub fn meta(report: &Report) -> Meta {
    Meta {
        server: report.target.version.clone(),
        flavor: report.target.flavor.clone(),
        recorded_with: format!("testkeeper conform {}", env!("CARGO_PKG_VERSION")),
    }
}

/// The session that creates and removes the root, and the scenarios' subtrees under it.
struct Admin {
    client: Client,
    root: String,
    created_root: bool,
}

impl Admin {
    async fn open(addr: SocketAddr, root: &str, read_only: bool) -> Result<Admin, SuiteError> {
        let client = Client::connect(addr, ConnectOptions::default())
            .await
            .map_err(|source| SuiteError::Connect { addr, source })?;
        let created_root = !read_only && client.create(root, b"", &Acl::open(), 0).await.is_ok();
        if !read_only && !created_root && client.exists(root, false).await.ok().flatten().is_none() {
            return Err(SuiteError::Root { addr, root: root.to_string() });
        }
        Ok(Admin { client, root: root.to_string(), created_root })
    }

    async fn finish(self) {
        // Only a root this run created is removed (and only when empty); a vendor's chosen
        // root stays.
        if self.created_root {
            let _ = self.client.sync(&self.root).await;
            let _ = self.client.delete(&self.root, -1).await;
        }
        let _ = self.client.close().await;
    }
}

/// A server's flavor as its system nodes tell: `keeper` when `/keeper/api_version` exists.
///
/// # Errors
/// The server cannot be reached.
pub async fn detect_flavor(addr: SocketAddr) -> Result<String, SuiteError> {
    let c = Client::connect(addr, ConnectOptions::default())
        .await
        .map_err(|source| SuiteError::Connect { addr, source })?;
    let keeper = matches!(c.exists("/keeper/api_version", false).await, Ok(Some(_)));
    let _ = c.close().await;
    Ok(if keeper { "keeper" } else { "zookeeper" }.to_string())
}

/// Flavor (from the system nodes unless given) and version (from `srvr`, else `envi`).
async fn server_info(ep: &Endpoint, flavor: Option<String>) -> Result<ServerInfo, SuiteError> {
    let addr = ep.nodes[0];
    let flavor = match flavor {
        Some(f) => f,
        None => detect_flavor(addr).await?,
    };
    let mut version = String::from("version unknown (srvr and envi not answered)");
    for word in ["srvr", "envi"] {
        if let Ok(text) = probes::raw_4lw(addr, word).await {
            if let Some(line) = text.lines().find(|l| l.to_lowercase().contains("version")) {
                version = line.trim().to_string();
                break;
            }
        }
    }
    let listed: Vec<String> = ep.nodes.iter().map(SocketAddr::to_string).collect();
    let address =
        if listed.join(",") == ep.name { ep.name.clone() } else { format!("{} = {}", ep.name, listed.join(",")) };
    Ok(ServerInfo { address, flavor, version })
}
