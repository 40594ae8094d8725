//! `--launches N`: how fast a server starts, spawn to the first `imok` answer to `ruok`,
//! measured N times each for `testkeeper serve` (in memory) and for Debian's ZooKeeper
//! started two ways: as the rest of the bench starts it (`-Xmx1000m`, the default collector)
//! and tuned for a fast start (the serial collector, a 64 MiB heap, the C1 compiler only:
//! what a test suite that cares about start time would pick). The servers take turns in
//! blocks of [`BLOCK`] starts (testkeeper, ZooKeeper, tuned ZooKeeper, then again), so a machine
//! that slows down slows all three; the ratios are of medians, ZooKeeper / testkeeper ("how
//! many times faster"). Blocks, not single starts in turn: on this project's virtual machines
//! the first process to touch memory after a JVM exited pays for it (docs/performance.md), and
//! one-by-one turns put every testkeeper start right after a JVM. Starts that came right
//! after one are reported apart.
//!
//! Each testkeeper start also reports its own phases from `main` (its `launch` log line,
//! `cli/src/launch.rs`): parsing the arguments, logging, the runtime, the server up to its
//! announce. What they leave of the spawn-to-`imok` time is exec and the dynamic loader
//! before `main`, and the client's connect and `ruok` after it.

use serde_json::{json, Value};

use super::spawn::{self, temp_data_dir, Spawned, TkOptions};
use super::stats::median;

/// Starts of one server in a row before the next server's turn.
const BLOCK: usize = 5;

/// JVM options of the start-tuned ZooKeeper.
const ZK_FAST_START: [&str; 3] = ["-XX:+UseSerialGC", "-Xmx64m", "-XX:TieredStopAtLevel=1"];

/// testkeeper's phases, as its `launch` line names them.
const PHASES: [&str; 5] = ["args_us", "logging_us", "runtime_us", "server_us", "total_us"];

/// Starts each server `n` times and reports the medians, the ratios, testkeeper's phases and
/// the embedded start.
///
/// # Errors
/// A server that cannot be spawned or never answers `imok`.
pub async fn measure(n: usize) -> Result<Value, String> {
    let mut out = tokio::task::spawn_blocking(move || measure_blocking(n)).await.map_err(|e| e.to_string())??;
    // In-process, for the embedding API's users: no exec, no runtime to build.
    out["embedded"] = super::report::embedded_start().await?;
    Ok(out)
}

fn measure_blocking(n: usize) -> Result<Value, String> {
    let (mut tk, mut zk, mut zk_fast) = (Vec::new(), Vec::new(), Vec::new());
    let mut after_jvm = Vec::new();
    let mut phases: Vec<Value> = Vec::new();
    let ms = |s: &Spawned| s.launch_to_imok.as_secs_f64() * 1e3;
    while tk.len() < n {
        let k = BLOCK.min(n - tk.len());
        for i in 0..k {
            let s = spawn::testkeeper(&TkOptions { phases: true, ..TkOptions::default() })?;
            if i == 0 && !zk_fast.is_empty() {
                after_jvm.push(ms(&s));
            }
            tk.push(ms(&s));
            phases.extend(s.phases.clone());
        }
        for _ in 0..k {
            zk.push(ms(&spawn::zookeeper(false)?));
        }
        for _ in 0..k {
            zk_fast.push(ms(&spawn::zookeeper_in(&temp_data_dir("zk-fast-start"), false, &ZK_FAST_START)?));
        }
        let last = |v: &[f64]| v[v.len() - k..].iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(" ");
        println!("  testkeeper ms: {}", last(&tk));
        println!("  ZooKeeper ms: {}", last(&zk));
        println!("  ZooKeeper tuned for start ms: {}", last(&zk_fast));
    }
    let (tk_m, zk_m, fast_m) = (median(&tk), median(&zk), median(&zk_fast));
    let phase_medians: serde_json::Map<String, Value> = PHASES
        .iter()
        .map(|k| {
            let xs: Vec<f64> = phases.iter().filter_map(|p| p[*k].as_f64()).collect();
            ((*k).to_string(), json!(if xs.is_empty() { Value::Null } else { json!(median(&xs)) }))
        })
        .collect();
    println!(
        "  launch to imok, medians of {n}: testkeeper {tk_m:.3} ms; ZooKeeper {zk_m:.0} ms ({:.0}x); \
         tuned for start {fast_m:.0} ms ({:.0}x)",
        zk_m / tk_m,
        fast_m / tk_m
    );
    if let Some(total) = phase_medians["total_us"].as_f64() {
        let part = |k: &str| phase_medians[k].as_f64().unwrap_or(0.0) / 1e3;
        println!(
            "  testkeeper's phases (medians): arguments {:.3} ms, logging {:.3} ms, runtime {:.3} ms, server {:.3} ms; \
             main to announce {:.3} ms, the rest (exec, loader, connect, ruok) {:.3} ms",
            part("args_us"),
            part("logging_us"),
            part("runtime_us"),
            part("server_us"),
            total / 1e3,
            tk_m - total / 1e3
        );
    }
    Ok(json!({
        "starts": n,
        "block": BLOCK,
        "testkeeper_after_jvm_ms": after_jvm,
        "testkeeper_after_jvm_ms_median": if after_jvm.is_empty() { Value::Null } else { json!(median(&after_jvm)) },
        "poll_us": spawn::IMOK_POLL.as_micros() as u64,
        "testkeeper_ms": tk, "zookeeper_ms": zk, "zookeeper_fast_start_ms": zk_fast,
        "testkeeper_ms_median": tk_m, "zookeeper_ms_median": zk_m, "zookeeper_fast_start_ms_median": fast_m,
        "zookeeper_fast_start_jvm": ZK_FAST_START,
        "times_faster": zk_m / tk_m, "times_faster_than_fast_start": fast_m / tk_m,
        "testkeeper_phases_us_median": phase_medians,
        "testkeeper_phases_us": phases,
    }))
}
