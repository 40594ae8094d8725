//! The bench's summary: per-target medians over rounds, the A/B ratios (median of per-round
//! ratios, so drift between rounds cancels), and the embedded server's start time.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use serde_json::{json, Value};
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;

use super::spawn::{four_letter_word, Spawned};
use super::stats::median;

/// Starts of the embedded server measured; the median is reported.
const EMBEDDED_STARTS: usize = 9;

/// One server under test and what its rounds measured.
#[derive(Debug)]
pub struct Target {
    pub label: &'static str,
    /// The first member: where the populate, memory and watch workloads go.
    pub addr: SocketAddr,
    /// Every member (one for a single server): the op mix's sessions go to them in turn.
    pub members: Vec<SocketAddr>,
    pub spawned: Option<Spawned>,
    pub ops_per_sec: Vec<f64>,
    pub p99_us: Vec<f64>,
}

impl Target {
    pub fn new(label: &'static str, addr: SocketAddr, spawned: Option<Spawned>) -> Target {
        Target { label, addr, members: vec![addr], spawned, ops_per_sec: Vec::new(), p99_us: Vec::new() }
    }

    /// A server or cluster given on the command line; `members` is never empty.
    pub fn members(label: &'static str, members: Vec<SocketAddr>) -> Target {
        let first = members[0];
        Target { members, ..Target::new(label, first, None) }
    }

    /// Label, address, and for a spawned server its launch-to-`imok` time.
    pub fn describe(&self) -> Value {
        json!({
            "label": self.label,
            "addr": self.members.iter().map(SocketAddr::to_string).collect::<Vec<_>>().join(","),
            "spawned": self.spawned.is_some(),
            "launch_to_imok_ms": self.spawned.as_ref().map(|s| s.launch_to_imok.as_secs_f64() * 1e3),
        })
    }
}

/// Medians per target and, with two targets, the ratios A / B.
pub fn summary(targets: &[Target]) -> Value {
    let per: Vec<Value> = targets
        .iter()
        .map(|t| {
            json!({
                "label": t.label,
                "ops_per_sec_median": median(&t.ops_per_sec),
                "p99_us_median": median(&t.p99_us),
                "launch_to_imok_ms": t.spawned.as_ref().map(|s| s.launch_to_imok.as_secs_f64() * 1e3),
            })
        })
        .collect();
    let mut out = json!({ "targets": per });
    if let [a, b] = targets {
        let ratios = |x: &[f64], y: &[f64]| -> Vec<f64> { x.iter().zip(y).map(|(x, y)| x / y).collect() };
        out["vs"] = json!({
            "a": a.label,
            "b": b.label,
            "throughput_ratio": median(&ratios(&a.ops_per_sec, &b.ops_per_sec)),
            "p99_ratio": median(&ratios(&a.p99_us, &b.p99_us)),
        });
        if let (Some(sa), Some(sb)) = (&a.spawned, &b.spawned) {
            out["vs"]["launch_ratio"] = json!(sa.launch_to_imok.as_secs_f64() / sb.launch_to_imok.as_secs_f64());
        }
    }
    out
}

/// Prints the summary's medians and ratios.
pub fn print_summary(summary: &Value) {
    for t in summary["targets"].as_array().into_iter().flatten() {
        println!(
            "  median {:<11} {:>10.0} ops/s  p99 {:>6.0} us",
            t["label"].as_str().unwrap_or("?"),
            t["ops_per_sec_median"].as_f64().unwrap_or(0.0),
            t["p99_us_median"].as_f64().unwrap_or(0.0)
        );
    }
    let vs = &summary["vs"];
    if !vs.is_null() {
        println!(
            "  {} / {}: throughput x{:.2}, p99 x{:.2}{}",
            vs["a"].as_str().unwrap_or("a"),
            vs["b"].as_str().unwrap_or("b"),
            vs["throughput_ratio"].as_f64().unwrap_or(0.0),
            vs["p99_ratio"].as_f64().unwrap_or(0.0),
            vs["launch_ratio"].as_f64().map(|r| format!(", launch to imok x{r:.4}")).unwrap_or_default()
        );
    }
}

/// Time from `TestKeeper::start` to the first `imok`, in-process (median of several starts).
///
/// # Errors
/// When the embedded server cannot bind a loopback port.
pub async fn embedded_start() -> Result<Value, String> {
    let mut times = Vec::with_capacity(EMBEDDED_STARTS);
    for _ in 0..EMBEDDED_STARTS {
        let mut cfg = ServerConfig::new(Flavor::Keeper);
        cfg.listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let t0 = Instant::now();
        let server = TestKeeper::start(cfg).await.map_err(|e| format!("embedded start: {e}"))?;
        let addr = server.addr();
        let ok =
            tokio::task::spawn_blocking(move || four_letter_word(addr, "ruok")).await.map_err(|e| e.to_string())?;
        let took = t0.elapsed();
        if !ok.is_ok_and(|a| a == "imok") {
            return Err("embedded server did not answer imok".into());
        }
        server.shutdown().await;
        times.push(took.as_secs_f64() * 1e3);
    }
    println!("  embedded TestKeeper::start to imok: {:.3} ms (median of {EMBEDDED_STARTS})", median(&times));
    Ok(json!({ "start_to_imok_ms_median": median(&times), "samples_ms": times }))
}
