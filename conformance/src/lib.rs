//! Conformance suite (issue 5): runs a catalogue of scenarios against a ZooKeeper-protocol
//! server, writes normalized transcripts, diffs them against a live reference server or a
//! stored golden transcript, and reports (terminal, JSON, JUnit, Markdown).
//!
//! # Layout
//! - `scenario`, `ops`: what a scenario is and the builders the catalogue uses.
//! - `catalogue/`: the scenarios, as data tables.
//! - `runner`, `race`: running one scenario on one server; concurrent steps.
//! - `transcript`: the JSON-lines format and its normalization.
//! - `diff`, `expected`: comparing transcripts; the known Keeper/ZooKeeper differences.
//! - `report`: the report structure and its renderings.

pub mod catalogue;
pub mod diff;
pub mod expected;
pub mod ops;
mod race;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod transcript;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::Acl;

pub use report::{Report, ScenarioResult, ServerInfo, Status};
use transcript::{Line, Meta};

/// What to run and against what.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub target: Option<SocketAddr>,
    pub reference: Option<SocketAddr>,
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
}

/// Runs the suite; `progress` sees each scenario's result as it finishes.
///
/// # Errors
/// Connecting to a server or reading the golden file fails; scenario failures are in the
/// report, not errors.
pub async fn run(cfg: &Config, progress: &mut dyn FnMut(&ScenarioResult)) -> Result<(Report, Vec<Line>), String> {
    let target = cfg.target.ok_or("no --target")?;
    let root = cfg.root.clone().unwrap_or_else(|| format!("/conformance-{:016x}", rand::random::<u64>()));
    let target_info = server_info(target, cfg.target_flavor.clone()).await?;
    let (reference_info, golden) = match (&cfg.reference, &cfg.expect) {
        (Some(addr), _) => (Some(server_info(*addr, None).await?), None),
        (None, Some(path)) => {
            let (meta, lines) = transcript::read_file(path)?;
            let info = ServerInfo { address: path.display().to_string(), flavor: meta.flavor, version: meta.server };
            let mut by: BTreeMap<String, Vec<Line>> = BTreeMap::new();
            lines.into_iter().for_each(|l| by.entry(l.scenario.clone()).or_default().push(l));
            (Some(info), Some(by))
        }
        (None, None) => (None, None),
    };
    let flavors_differ = reference_info.as_ref().is_some_and(|r| r.flavor != target_info.flavor);
    let t_admin = Admin::open(target, &root, cfg.read_only).await?;
    let r_admin = match cfg.reference {
        Some(addr) => Some(Admin::open(addr, &root, cfg.read_only).await?),
        None => None,
    };
    let started = Instant::now();
    let mut results = Vec::new();
    let mut all_lines = Vec::new();
    for sc in catalogue::all() {
        if cfg.filter.as_ref().is_some_and(|f| !sc.name.contains(f.as_str())) {
            continue;
        }
        let t0 = Instant::now();
        let mut result = ScenarioResult::new(&sc);
        // Keeper's extension ops exist only there: skip them unless every side is Keeper.
        let not_keeper = |flavor: &str| flavor != "keeper";
        let keeper_skip = sc.keeper_only()
            && (not_keeper(&target_info.flavor) || reference_info.as_ref().is_some_and(|r| not_keeper(&r.flavor)));
        if (cfg.read_only && !sc.read_only()) || keeper_skip {
            result.status = Status::Skipped;
            progress(&result);
            results.push(result);
            continue;
        }
        let run = runner::run_scenario(target, &t_admin.client, &root, &sc).await;
        result.problems = run.problems;
        let reference_lines = match (&r_admin, &golden) {
            (Some(a), _) => {
                let r = runner::run_scenario(a.addr, &a.client, &root, &sc).await;
                result.problems.extend(r.problems.into_iter().map(|p| format!("reference: {p}")));
                Some(r.lines)
            }
            (None, Some(g)) => Some(g.get(sc.name).cloned().unwrap_or_default()),
            (None, None) => None,
        };
        if let Some(reference) = reference_lines {
            result.diffs = diff::diff(sc.name, &run.lines, &reference, flavors_differ);
            if let Some(first) = result.diffs.iter().find(|d| !d.is_expected()) {
                let longer = if run.lines.len() > first.step { &run.lines } else { &reference };
                result.reproduction = diff::reproduction(longer, first.step);
            }
        }
        result.status = Status::of(&result);
        result.duration_ms = t0.elapsed().as_millis() as u64;
        result.steps = run.lines.len();
        progress(&result);
        results.push(result);
        all_lines.extend(run.lines);
    }
    t_admin.finish().await;
    if let Some(a) = r_admin {
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
    addr: SocketAddr,
    client: Client,
    root: String,
    created_root: bool,
}

impl Admin {
    async fn open(addr: SocketAddr, root: &str, read_only: bool) -> Result<Admin, String> {
        let client =
            Client::connect(addr, ConnectOptions::default()).await.map_err(|e| format!("connect {addr}: {e}"))?;
        let created_root = !read_only && client.create(root, b"", &Acl::open(), 0).await.is_ok();
        if !read_only && !created_root && client.exists(root, false).await.ok().flatten().is_none() {
            return Err(format!("cannot create the root {root} on {addr}"));
        }
        Ok(Admin { addr, client, root: root.to_string(), created_root })
    }

    async fn finish(self) {
        // Only a root this run created is removed; a vendor's chosen root stays.
        if self.created_root {
            let _ = self.client.delete(&self.root, -1).await;
        }
        let _ = self.client.close().await;
    }
}

/// Flavor (from the system nodes unless given) and version (from `srvr`, else `envi`).
async fn server_info(addr: SocketAddr, flavor: Option<String>) -> Result<ServerInfo, String> {
    let flavor = match flavor {
        Some(f) => f,
        None => {
            let c =
                Client::connect(addr, ConnectOptions::default()).await.map_err(|e| format!("connect {addr}: {e}"))?;
            let keeper = matches!(c.exists("/keeper/api_version", false).await, Ok(Some(_)));
            let _ = c.close().await;
            if keeper { "keeper" } else { "zookeeper" }.to_string()
        }
    };
    let mut version = String::from("unknown (srvr and envi not answered)");
    for word in ["srvr", "envi"] {
        if let Ok(text) = four_letter_word(addr, word).await {
            if let Some(line) = text.lines().find(|l| l.to_lowercase().contains("version")) {
                version = line.trim().to_string();
                break;
            }
        }
    }
    Ok(ServerInfo { address: addr.to_string(), flavor, version })
}

async fn four_letter_word(addr: SocketAddr, word: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let io = async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.write_all(word.as_bytes()).await?;
        let mut out = String::new();
        s.read_to_string(&mut out).await?;
        Ok(out)
    };
    tokio::time::timeout(Duration::from_secs(5), io).await.unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}
