//! The floor of a durable write for one synchronous session (`--durable` with one session and
//! one request in flight): no server can answer a durable write faster than the in-memory
//! write path plus one `fdatasync` of a small append on the same disk. Both are measured in
//! the same run: a `testkeeper serve` in memory takes the same workload for as many rounds,
//! and a file next to the durable data directory takes small appends, each made durable with
//! `fdatasync` (`File::sync_data`). The floor is `1 / (in-memory time per write + fdatasync
//! median)`; the durable server's throughput over it is the ratio reported.
//!
//! What testkeeper's flush promises differs: sled's flush is `sync_file_range`, not `fsync`
//! (spacejam/sled#1452; docs/persistence.md): a flushed entry survives the process being
//! killed, not necessarily a power loss. The floor is the stronger promise's cost.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use super::load::{self, LoadConfig};
use super::spawn::{self, TkOptions};
use super::stats::{median, quantile};

/// Bytes per append: about one small write's log record.
const RECORD: usize = 128;

/// Appends measured.
const APPENDS: usize = 1000;

/// `fdatasync` after each of [`APPENDS`] appends of [`RECORD`] bytes to a fresh file in
/// `dir`: the microseconds each append and sync took.
///
/// # Errors
/// The file cannot be created, written or synced.
pub fn fdatasync_us(dir: &Path) -> std::io::Result<Vec<f64>> {
    let path = dir.join(format!("testkeeper-bench-fdatasync-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&path)?;
    let record = [0x5au8; RECORD];
    let mut out = Vec::with_capacity(APPENDS);
    let result = (|| {
        for _ in 0..APPENDS {
            let t0 = Instant::now();
            file.write_all(&record)?;
            file.sync_data()?;
            out.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    result.map(|()| out)
}

/// The floor beside a durable run whose testkeeper (at `durable`) reached `durable_ops`
/// (median ops/s): the in-memory server's median over `rounds` rounds of `cfg`, the
/// `fdatasync` median, the floor, the ratio, and the durable server's average flush (`mntr`).
///
/// # Errors
/// The in-memory server cannot be spawned or loaded, or the disk cannot be measured.
pub async fn measure(
    durable: std::net::SocketAddr,
    cfg: &LoadConfig,
    rounds: usize,
    seed: u64,
    durable_ops: f64,
) -> Result<Value, String> {
    // What one of the durable server's own flushes took on average (ms), for the comparison.
    let flush_ms = tokio::task::spawn_blocking(move || {
        spawn::mntr_value(durable, "avg_fsynctime", std::time::Duration::from_secs(5)).ok()?.trim().parse::<f64>().ok()
    })
    .await
    .map_err(|e| e.to_string())?;
    let memory =
        tokio::task::spawn_blocking(|| spawn::testkeeper(&TkOptions::default())).await.map_err(|e| e.to_string())??;
    let warm = LoadConfig { ops: cfg.ops / 4, ..cfg.clone() };
    load::run_on(&[memory.addr], &warm, seed ^ 0x5757).await.map_err(|e| format!("in-memory warm-up: {e}"))?;
    let mut memory_ops = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let (rec, elapsed) = load::run_on(&[memory.addr], cfg, seed.wrapping_add(r as u64)).await?;
        memory_ops.push(rec.count() as f64 / elapsed.as_secs_f64().max(1e-9));
    }
    drop(memory);
    let dir = std::env::temp_dir();
    let sync_dir = dir.clone();
    let syncs = tokio::task::spawn_blocking(move || fdatasync_us(&sync_dir))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("timing fdatasync in {}: {e}", dir.display()))?;
    let (mem_ops, sync_us) = (median(&memory_ops), median(&syncs));
    let write_us = 1e6 / mem_ops.max(1e-9);
    let floor_ops = 1e6 / (write_us + sync_us);
    let ratio = durable_ops / floor_ops;
    println!(
        "  floor: in-memory write path {write_us:.1} us ({mem_ops:.0} ops/s) + fdatasync of a {RECORD} B append \
         {sync_us:.1} us (median of {APPENDS}) = {floor_ops:.0} ops/s; durable testkeeper {durable_ops:.0} ops/s \
         is x{ratio:.2} of it (its own flushes: {} ms on average)",
        flush_ms.map_or_else(|| "?".to_string(), |f| format!("{f:.3}"))
    );
    Ok(json!({
        "memory_ops_per_sec": memory_ops, "memory_ops_per_sec_median": mem_ops, "write_path_us": write_us,
        "fdatasync_us_median": sync_us, "fdatasync_us_p99": quantile(&syncs, 0.99), "appends": APPENDS,
        "record_bytes": RECORD, "dir": dir.display().to_string(),
        "floor_ops_per_sec": floor_ops, "durable_ops_per_sec": durable_ops, "ratio": ratio,
        "durable_flush_ms_avg": flush_ms,
        "flush": "sled: sync_file_range (survives a killed process, not necessarily a power loss); floor: fdatasync",
    }))
}
