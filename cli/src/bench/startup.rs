//! `--start-znodes N`: what a big tree costs a durable server, measured on both servers in one
//! run: the start time of a server whose data directory holds an N-znode snapshot (testkeeper
//! against ZooKeeper loading the same tree from its own snapshot), and, on testkeeper, how long
//! taking a snapshot of that tree holds the engine's lock against how long the whole snapshot
//! takes, with what a client sees meanwhile.
//!
//! testkeeper: populate through `serve --data-dir` (`--fsync never`: the populate speed is not
//! what is measured), take snapshots with `csnp` (each after one more create, so each is a new
//! index), kill, then restart on the directory `--restarts` times. ZooKeeper: populate
//! (`forceSync=no`), kill, restart once (it replays its transaction log and writes a snapshot
//! of the loaded tree as it starts), then restart `--restarts` times from that snapshot. A
//! start is spawn to serving: `imok` for testkeeper (it accepts once recovered), `srvr`
//! reporting a Mode for ZooKeeper.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

use super::load;
use super::spawn::{self, four_letter_word_within, mntr_value, temp_data_dir, Spawned, TkOptions};
use super::stats::median;

/// Snapshots taken of the populated tree.
const SNAPSHOTS: usize = 3;

/// Runs the measurement on both servers.
///
/// # Errors
/// A server that cannot be started, populated or restarted, or a restart that lost nodes.
pub async fn measure(n: u64, value_size: usize, seed: u64, restarts: usize) -> Result<Value, String> {
    let tk = testkeeper_side(n, value_size, seed, restarts).await?;
    let zk = zookeeper_side(n, value_size, seed, restarts).await?;
    let ratio = tk["start_ms_median"].as_f64().unwrap_or(0.0) / zk["start_ms_median"].as_f64().unwrap_or(1.0);
    println!("  start with {n} znodes: testkeeper / zookeeper x{ratio:.3}");
    Ok(json!({"znodes": n, "value_size": value_size, "restarts": restarts, "seed": seed,
              "testkeeper": tk, "zookeeper": zk, "start_ratio": ratio}))
}

async fn blocking<T: Send + 'static, E: Into<String> + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| e.to_string())?.map_err(Into::into)
}

/// `zk_<key>` from `mntr`.
async fn mntr(addr: SocketAddr, key: &'static str) -> Result<String, String> {
    blocking(move || mntr_value(addr, key, Duration::from_secs(120))).await
}

async fn mntr_u64(addr: SocketAddr, key: &'static str) -> Result<u64, String> {
    mntr(addr, key).await?.trim().parse().map_err(|e| format!("{key}: {e}"))
}

/// Bytes under `dir`.
fn du(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => du(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

/// `exists("/")` in a loop until `stop`: the largest latency seen, and how many calls.
async fn probe(client: Arc<Client>, stop: Arc<AtomicBool>) -> (u64, u64) {
    let (mut max_us, mut calls) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        if client.exists("/", false).await.is_err() {
            break;
        }
        max_us = max_us.max(t0.elapsed().as_micros() as u64);
        calls += 1;
    }
    (max_us, calls)
}

/// Takes one snapshot with `csnp` and waits for its file, probing latency meanwhile.
async fn one_snapshot(addr: SocketAddr, client: &Arc<Client>) -> Result<Value, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let prober = tokio::spawn(probe(client.clone(), stop.clone()));
    let started = Instant::now();
    // A snapshot the distance started (one every 100000 entries while populating) may still be
    // running: csnp refuses then, so ask again until it is taken.
    let index: u64 = loop {
        let csnp =
            move || four_letter_word_within(addr, "csnp", Duration::from_secs(120)).map_err(|e| format!("csnp: {e}"));
        let answer = blocking(csnp).await?;
        match answer.trim().parse() {
            Ok(i) => break i,
            Err(_) if started.elapsed() < Duration::from_secs(600) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(_) => return Err(format!("csnp answered {answer:?} for 10 minutes")),
        }
    };
    while mntr_u64(addr, "last_snapshot_index").await? != index {
        if started.elapsed() > Duration::from_secs(600) {
            return Err(format!("the snapshot at {index} was not written within 10 minutes"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let seen_ms = started.elapsed().as_secs_f64() * 1e3;
    stop.store(true, Ordering::Relaxed);
    let (max_us, calls) = prober.await.map_err(|e| e.to_string())?;
    let (copy, write, compact) = (
        mntr_u64(addr, "last_snapshot_copy_us").await?,
        mntr_u64(addr, "last_snapshot_write_us").await?,
        mntr_u64(addr, "last_log_compact_us").await?,
    );
    let bytes = mntr_u64(addr, "latest_snapshot_size").await?;
    println!(
        "  snapshot at {index}: lock held {:.1} ms (copy) + {:.1} ms (log compaction), written off the lock in {:.1} ms, \
         {bytes} B; a client's slowest exists() meanwhile {:.1} ms over {calls} calls",
        copy as f64 / 1e3,
        compact as f64 / 1e3,
        write as f64 / 1e3,
        max_us as f64 / 1e3
    );
    Ok(json!({"index": index, "copy_us": copy, "compact_us": compact, "write_us": write, "bytes": bytes,
              "csnp_to_done_ms": seen_ms, "probe_max_us": max_us, "probe_calls": calls}))
}

/// Spawns testkeeper on `dir` (`fsync` as given) off the runtime.
async fn spawn_tk(dir: &Path, fsync: Option<&'static str>) -> Result<Spawned, String> {
    let opts = TkOptions { data_dir: Some(dir.to_path_buf()), fsync, ..TkOptions::default() };
    blocking(move || spawn::testkeeper(&opts)).await
}

async fn testkeeper_side(n: u64, value_size: usize, seed: u64, restarts: usize) -> Result<Value, String> {
    let dir = temp_data_dir("start-tk");
    let result = testkeeper_runs(&dir, n, value_size, seed, restarts).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn testkeeper_runs(dir: &Path, n: u64, value_size: usize, seed: u64, restarts: usize) -> Result<Value, String> {
    let s = spawn_tk(dir, Some("never")).await?;
    let t0 = Instant::now();
    let prefix = load::populate(s.addr, n, value_size, seed).await?;
    let populate_s = t0.elapsed().as_secs_f64();
    println!("  testkeeper: {n} znodes populated in {populate_s:.1} s");
    let client = Arc::new(Client::connect(s.addr, ConnectOptions::default()).await.map_err(|e| e.to_string())?);
    // The latency a client sees with no snapshot running, for comparison.
    let stop = Arc::new(AtomicBool::new(false));
    let idle = tokio::spawn(probe(client.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let (idle_max_us, idle_calls) = idle.await.map_err(|e| e.to_string())?;
    let mut snapshots = Vec::new();
    for i in 0..SNAPSHOTS {
        let path = format!("{prefix}/snapshot-{i}");
        client.create(&path, b"", &Acl::open(), create_mode::PERSISTENT).await.map_err(|e| e.to_string())?;
        snapshots.push(one_snapshot(s.addr, &client).await?);
    }
    drop(client);
    s.kill_keeping_dir();
    let on_disk = json!({"snapshots_bytes": du(&dir.join("snapshots")), "log_bytes": du(&dir.join("log"))});
    let starts =
        timed_restarts(restarts, n, "testkeeper restart on the data directory", || spawn_tk(dir, None)).await?;
    Ok(json!({"populate_s": populate_s, "idle_probe_max_us": idle_max_us, "idle_probe_calls": idle_calls,
              "snapshots": snapshots, "on_disk": on_disk, "start_ms": starts, "start_ms_median": median(&starts)}))
}

/// Starts a server `restarts` times on its kept directory, each until it serves all `n`
/// znodes; the launch-to-serving times, ms.
async fn timed_restarts<F, Fut>(restarts: usize, n: u64, what: &str, spawn: F) -> Result<Vec<f64>, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Spawned, String>>,
{
    let mut starts = Vec::new();
    for _ in 0..restarts {
        let s = spawn().await?;
        let count = mntr_u64(s.addr, "znode_count").await?;
        if count < n {
            return Err(format!("{what}: {count} znodes, not {n}"));
        }
        let ms = s.launch_to_serving.as_secs_f64() * 1e3;
        println!("  {what}: {ms:.1} ms to serving ({count} znodes)");
        starts.push(ms);
        s.kill_keeping_dir();
    }
    Ok(starts)
}

async fn spawn_zk(dir: PathBuf) -> Result<Spawned, String> {
    blocking(move || spawn::zookeeper_in(&dir, false, &spawn::ZK_JVM)).await
}

async fn zookeeper_side(n: u64, value_size: usize, seed: u64, restarts: usize) -> Result<Value, String> {
    let dir = temp_data_dir("start-zk");
    let result = zookeeper_runs(&dir, n, value_size, seed, restarts).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// ZooKeeper's snapshot and log files, names and sizes.
fn zk_files(dir: &Path) -> Value {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir.join("data").join("version-2"))
        .map(|rd| {
            rd.flatten()
                .map(|e| (e.file_name().to_string_lossy().to_string(), e.metadata().map_or(0, |m| m.len())))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    json!(files)
}

async fn zookeeper_runs(dir: &Path, n: u64, value_size: usize, seed: u64, restarts: usize) -> Result<Value, String> {
    let s = spawn_zk(dir.to_path_buf()).await?;
    let t0 = Instant::now();
    load::populate(s.addr, n, value_size, seed).await?;
    let populate_s = t0.elapsed().as_secs_f64();
    println!("  zookeeper: {n} znodes populated in {populate_s:.1} s");
    s.kill_keeping_dir();
    let after_populate = zk_files(dir);
    // The first start replays the transaction log and writes a snapshot of what it loaded.
    let s = spawn_zk(dir.to_path_buf()).await?;
    let first_ms = s.launch_to_serving.as_secs_f64() * 1e3;
    println!("  zookeeper first restart (replays its log): {first_ms:.0} ms to serving");
    s.kill_keeping_dir();
    let after_first = zk_files(dir);
    let starts =
        timed_restarts(restarts, n, "zookeeper restart from its snapshot", || spawn_zk(dir.to_path_buf())).await?;
    Ok(json!({"populate_s": populate_s, "first_restart_ms": first_ms, "files_after_populate": after_populate,
              "files_after_first_restart": after_first, "start_ms": starts, "start_ms_median": median(&starts)}))
}
