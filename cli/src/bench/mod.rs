//! `testkeeper bench`: a load generator on our async client, run against one server or side
//! by side against two, with every comparison a ratio measured in the same run.
//!
//! With `--vs`, rounds alternate between the targets (A B, then B A, ...) so slow drift of a
//! shared, noisy machine hits both alike, and the reported ratios are medians of per-round
//! ratios. Every run starts with an unmeasured warm-up per target (the JVM needs one).
//!
//! # Layout
//! - this file: flags and the run: spawn, warm up, rounds, memory, JSON.
//! - `mix`: op kinds, weights, and how requests are built over the key space.
//! - `load`: sessions, pipelining, the measured loop, and znode population.
//! - `stats`: hdrhistogram recorders, error counts, medians.
//! - `spawn`: starting this binary's `serve` (in memory or on a data directory), another
//!   build's, or Debian's ZooKeeper, timing `imok`, VmRSS.
//! - `floor`: with `--durable` and one synchronous session, the disk's floor: the in-memory
//!   write path plus one `fdatasync` of a small append, measured in the same run.
//! - `launch`: `--launches`, spawn to the first `imok` against ZooKeeper, with testkeeper's phases.
//! - `startup`: `--start-znodes`, start time with a big snapshot and the snapshot's lock time.
//! - `plot`: `--plot`, throughput vs sessions as a PNG.
//! - `report`: the summary (medians, ratios) and the embedded start time.
//! - `cluster`, `ensemble`: `--cluster`, a 3-node testkeeper cluster against a 3-server
//!   ZooKeeper ensemble (throughput, leader failover, start to a leader); `java_load`: with
//!   `--java`, the throughput again through Apache ZooKeeper's Java client.
//! - `watch_load`: `--watch-load`, the three watch workloads (fire, expire, setWatches).

mod cluster;
mod ensemble;
mod failover;
mod floor;
mod java_load;
mod launch;
mod load;
mod mix;
mod plot;
mod report;
mod spawn;
mod startup;
mod stats;
mod watch_load;

use crate::exit::CliError;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use load::LoadConfig;
use mix::Mix;
use report::Target;

/// Flags of `bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Server to measure, or the members of a cluster (`a:2181,b:2181,c:2181`: sessions go
    /// to them in turn). Defaults to the one `--spawn-testkeeper` starts.
    #[arg(long, value_name = "HOST:PORT[,...]", value_parser = crate::addr::host_list)]
    pub target: Option<crate::addr::HostList>,
    /// A second server (or cluster, as `--target`) to run the same workload against,
    /// alternating rounds; ratios are target / vs. Defaults to the one `--spawn-zookeeper`
    /// starts.
    #[arg(long, value_name = "HOST:PORT[,...]", value_parser = crate::addr::host_list)]
    pub vs: Option<crate::addr::HostList>,
    /// Start `testkeeper serve` (this binary) on a free port and measure it.
    #[arg(long)]
    pub spawn_testkeeper: bool,
    /// Start Debian's Apache ZooKeeper 3.8 (forceSync=no, or yes with --durable) on a free
    /// port and measure it.
    #[arg(long)]
    pub spawn_zookeeper: bool,
    /// Durable servers: the spawned testkeeper serves a fresh data directory with `--fsync
    /// always`, the spawned ZooKeeper runs with `forceSync=yes`; both directories under the
    /// system temp directory, so on one disk.
    #[arg(long)]
    pub durable: bool,
    /// Start this other testkeeper binary (`BIN serve`, in memory) as the second server,
    /// labelled `baseline`: this build against an earlier one in one run.
    #[arg(long, value_name = "BIN", conflicts_with_all = ["vs", "spawn_zookeeper", "durable"])]
    pub spawn_baseline: Option<PathBuf>,
    /// Instead of a workload: start time with an N-znode snapshot, testkeeper against
    /// ZooKeeper loading the same tree from its own snapshot, and how long testkeeper's
    /// snapshot of that tree holds the engine's lock.
    #[arg(long, value_name = "N", conflicts_with_all = ["target", "vs"])]
    pub start_znodes: Option<u64>,
    /// Instead of a workload: spawn to the first `imok`, N starts each of `testkeeper serve`
    /// (in memory) and of ZooKeeper as the bench runs it and tuned for a fast start (serial
    /// GC, 64 MiB heap, C1 only), alternating; medians, ratios, and testkeeper's own phases.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000),
          conflicts_with_all = ["target", "vs", "start_znodes", "cluster"])]
    pub launches: Option<u64>,
    /// Timed restarts per server with --start-znodes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub restarts: u64,
    /// Start the spawned testkeeper with `--no-digest`.
    #[arg(long)]
    pub no_digest: bool,
    /// Concurrent sessions (one connection each).
    #[arg(long, default_value_t = 1)]
    pub sessions: usize,
    /// Measured requests per round, over all sessions.
    #[arg(long, default_value_t = 20_000)]
    pub ops: u64,
    /// Weighted op mix: create, get, set, delete, multi, list.
    #[arg(long, default_value = "create=10,get=50,set=20,delete=10,multi=5,list=5")]
    pub mix: String,
    /// Bytes of data in every create and set.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Decode the body of every measured reply, as a client library does, instead of reading
    /// its header alone (error codes are counted either way). Off by default: the client
    /// shares the cores with the server it measures, and decoding costs it more the more a
    /// reply carries, which a server that answers with empty bodies would not pay.
    #[arg(long)]
    pub decode_replies: bool,
    /// Requests in flight per session (1 = synchronous).
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Measured rounds per target.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Keys in the key space (created before the clock starts); list returns all of them.
    #[arg(long, default_value_t = 256)]
    pub keys: u32,
    /// Unmeasured requests sent to each target before the rounds (default: ops / 4).
    #[arg(long)]
    pub warmup: Option<u64>,
    /// After the rounds, create this many znodes of --value-size bytes on each spawned server
    /// and report VmRSS before and after.
    #[arg(long, default_value_t = 0)]
    pub znodes: u64,
    /// Instead of the op mix, time three watch workloads of this many watches on each target:
    /// firing them, closing a session that holds that many watched ephemerals, and one
    /// setWatches of that many paths (at most 100000; --rounds of them, at most 8).
    #[arg(long, default_value_t = 0)]
    pub watch_load: usize,
    /// Instead of one server each, start a 3-node testkeeper cluster (`serve --id N --peers`)
    /// and a 3-server ZooKeeper 3.8 ensemble and compare them: writes and reads at each of
    /// --cluster-sessions, --rounds leader kills each (kill to the first acknowledged write),
    /// and in-process start to a leader against Curator's TestingCluster (docs/performance.md).
    #[arg(long, conflicts_with_all = ["target", "vs", "spawn_testkeeper", "spawn_zookeeper", "watch_load", "znodes"])]
    pub cluster: bool,
    /// With --cluster: run each workload again through Apache ZooKeeper's Java client
    /// (scripts/bench-java/LoadGen.java, compiled with javac against Debian's zookeeper.jar).
    #[arg(long, requires = "cluster")]
    pub java: bool,
    /// With --cluster: this many more leader kills of the testkeeper cluster alone, after the
    /// paired --rounds, for the p50, p99 and max of its write gap.
    #[arg(long, default_value_t = 0, requires = "cluster")]
    pub failover_rounds: usize,
    /// Session counts of --cluster's workloads, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,32")]
    pub cluster_sessions: Vec<usize>,
    /// Seed of every random choice (keys, values, prefixes); printed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the full report here as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Instead of running a workload, plot throughput vs sessions from earlier `--json` files.
    #[arg(long, value_name = "PNG", requires = "inputs")]
    pub plot: Option<PathBuf>,
    /// Bench JSON files to plot (with --plot).
    #[arg(value_name = "JSON")]
    pub inputs: Vec<PathBuf>,
}

/// Runs the bench (or draws the plot).
///
/// # Errors
/// Bad flags, a server that cannot be started or reached, or a file that cannot be written.
pub async fn run(args: BenchArgs) -> Result<(), CliError> {
    if let Some(out) = &args.plot {
        plot::draw(out, &args.inputs)?;
        println!("wrote {}", out.display());
        return Ok(());
    }
    if args.sessions == 0
        || args.pipeline == 0
        || args.rounds == 0
        || args.keys == 0
        || args.cluster_sessions.contains(&0)
    {
        return Err(CliError::Usage(
            "--sessions, --pipeline, --rounds, --keys and --cluster-sessions must be positive".into(),
        ));
    }
    let cfg = LoadConfig {
        sessions: args.sessions,
        ops: args.ops,
        pipeline: args.pipeline,
        keys: args.keys,
        value_size: args.value_size,
        mix: Mix::parse(&args.mix)?,
        decode_replies: args.decode_replies,
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    if let Some(n) = args.start_znodes {
        println!(
            "bench: seed {seed}, start time with {n} znodes of {} B, {} restart(s)",
            args.value_size, args.restarts
        );
        let out = startup::measure(n, args.value_size, seed, args.restarts as usize).await?;
        return Ok(write_json(args.json.as_deref(), &json!({ "start_with_snapshot": out }))?);
    }
    if let Some(n) = args.launches {
        println!("bench: {n} start(s) per server, spawn to the first imok (polled every {:?})", spawn::IMOK_POLL);
        let out = launch::measure(n as usize).await?;
        return Ok(write_json(args.json.as_deref(), &json!({ "launch": out }))?);
    }
    if args.cluster {
        let plan = cluster::ClusterPlan {
            sessions: args.cluster_sessions.clone(),
            ops: cfg.ops,
            warmup: args.warmup.unwrap_or(cfg.ops / 4),
            rounds: args.rounds,
            pipeline: cfg.pipeline,
            keys: cfg.keys,
            value_size: cfg.value_size,
            decode_replies: cfg.decode_replies,
            seed,
            java: args.java,
            failover_rounds: args.failover_rounds,
        };
        println!(
            "bench --cluster: seed {seed}, sessions {:?} x {} in flight, {} ops/round, {} round(s)",
            plan.sessions, plan.pipeline, plan.ops, plan.rounds
        );
        let mut out = cluster::run(&plan).await?;
        out["config"] = json!({
            "sessions": plan.sessions, "pipeline": plan.pipeline, "ops": plan.ops, "rounds": plan.rounds,
            "keys": plan.keys, "value_size": plan.value_size, "seed": seed, "warmup": plan.warmup,
            "decode_replies": plan.decode_replies,
        });
        return Ok(write_json(args.json.as_deref(), &out)?);
    }
    let mut targets = start_targets(&args).await?;
    println!(
        "bench: seed {seed}, {} session(s) x {} in flight, {} ops/round, {} round(s), mix {}, replies {}",
        cfg.sessions,
        cfg.pipeline,
        cfg.ops,
        args.rounds,
        cfg.mix.describe(),
        if cfg.decode_replies { "decoded" } else { "header only" }
    );
    for t in &targets {
        let start = t.spawned.as_ref().map(|s| format!(", launch to imok {:?}", s.launch_to_imok)).unwrap_or_default();
        println!("  {} at {}{start}", t.label, t.describe()["addr"].as_str().unwrap_or("?"));
    }

    if args.watch_load > 0 {
        let watch = watch_load::rounds(&targets, args.watch_load, args.rounds).await?;
        let out = json!({
            "config": { "watch_load": args.watch_load, "rounds": args.rounds, "seed": seed },
            "targets": targets.iter().map(Target::describe).collect::<Vec<_>>(),
            "watch_load": watch,
        });
        return Ok(write_json(args.json.as_deref(), &out)?);
    }
    let warm = LoadConfig { ops: args.warmup.unwrap_or(cfg.ops / 4), ..cfg.clone() };
    if warm.ops > 0 {
        for t in &targets {
            load::run_on(&t.members, &warm, seed ^ 0x5757).await.map_err(|e| format!("{} warm-up: {e}", t.label))?;
        }
    }
    let mut rounds = Vec::new();
    let progress = crate::progress::bar((args.rounds * targets.len()) as u64, "bench");
    for r in 0..args.rounds {
        let order: Vec<usize> =
            if r % 2 == 0 { (0..targets.len()).collect() } else { (0..targets.len()).rev().collect() };
        for i in order {
            let t = &mut targets[i];
            progress.set_message(format!("round {r} {}", t.label));
            let (rec, elapsed) = load::run_on(&t.members, &cfg, seed.wrapping_add(r as u64)).await?;
            let ops_s = rec.count() as f64 / elapsed.as_secs_f64().max(1e-9);
            progress.inc(1);
            progress.suspend(|| {
                println!(
                    "  round {r} {:<11} {:>10.0} ops/s  p99 {:>6} us  {}",
                    t.label,
                    ops_s,
                    rec.p99_us(),
                    rec.describe_errors()
                )
            });
            t.ops_per_sec.push(ops_s);
            t.p99_us.push(rec.p99_us() as f64);
            let mut j = rec.to_json(elapsed);
            j["round"] = json!(r);
            j["target"] = json!(t.label);
            rounds.push(j);
        }
    }
    progress.finish_and_clear();
    let summary = report::summary(&targets);
    report::print_summary(&summary);
    let memory =
        if args.znodes > 0 { measure_memory(&targets, args.znodes, args.value_size, seed).await? } else { json!(null) };
    let embedded = if args.spawn_testkeeper { report::embedded_start().await? } else { json!(null) };
    // One session, one write at a time: bounded by one flush per write, so measured against
    // the disk's floor as well as against ZooKeeper.
    let floor = match targets.first() {
        Some(t) if args.durable && args.spawn_testkeeper && cfg.sessions == 1 && cfg.pipeline == 1 => {
            floor::measure(t.addr, &cfg, args.rounds, seed, stats::median(&t.ops_per_sec)).await?
        }
        _ => json!(null),
    };

    let out = json!({
        "config": {
            "sessions": cfg.sessions, "pipeline": cfg.pipeline, "ops": cfg.ops, "rounds": args.rounds,
            "keys": cfg.keys, "value_size": cfg.value_size, "mix": cfg.mix.describe(), "seed": seed,
            "warmup": warm.ops, "no_digest": args.no_digest, "durable": args.durable,
            "decode_replies": cfg.decode_replies,
            "baseline": args.spawn_baseline.as_ref().map(|p| p.display().to_string()),
        },
        "targets": targets.iter().map(Target::describe).collect::<Vec<_>>(),
        "rounds": rounds,
        "summary": summary,
        "memory": memory,
        "embedded_start": embedded,
        "floor": floor,
    });
    Ok(write_json(args.json.as_deref(), &out)?)
}

/// Writes the report to `path`, if given.
fn write_json(path: Option<&std::path::Path>, out: &Value) -> Result<(), String> {
    if let Some(path) = path {
        let text = serde_json::to_string_pretty(out).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The targets in order: A (`--target` or the spawned testkeeper), then B (`--vs` or the
/// spawned ZooKeeper).
async fn start_targets(args: &BenchArgs) -> Result<Vec<Target>, String> {
    let mut out = Vec::new();
    let blocking = |r: Result<Result<spawn::Spawned, spawn::SpawnError>, tokio::task::JoinError>| {
        r.map_err(|e| e.to_string())?.map_err(String::from)
    };
    if let Some(list) = &args.target {
        out.push(Target::members("target", crate::conform::endpoint(&list.0).await.nodes));
    } else if args.spawn_testkeeper {
        let opts = spawn::TkOptions {
            no_digest: args.no_digest,
            data_dir: args.durable.then(|| spawn::temp_data_dir("tk")),
            fsync: args.durable.then_some("always"),
            ..spawn::TkOptions::default()
        };
        let s = blocking(tokio::task::spawn_blocking(move || spawn::testkeeper(&opts)).await)?;
        out.push(Target::new(s.label, s.addr, Some(s)));
    }
    if let Some(list) = &args.vs {
        out.push(Target::members("vs", crate::conform::endpoint(&list.0).await.nodes));
    } else if let Some(bin) = &args.spawn_baseline {
        let opts = spawn::TkOptions {
            bin: Some(bin.clone()),
            label: Some("baseline"),
            no_digest: args.no_digest,
            ..spawn::TkOptions::default()
        };
        let s = blocking(tokio::task::spawn_blocking(move || spawn::testkeeper(&opts)).await)?;
        out.push(Target::new(s.label, s.addr, Some(s)));
    } else if args.spawn_zookeeper {
        let durable = args.durable;
        let s = blocking(tokio::task::spawn_blocking(move || spawn::zookeeper(durable)).await)?;
        out.push(Target::new(s.label, s.addr, Some(s)));
    }
    if out.is_empty() {
        return Err("nothing to measure: give --target, --spawn-testkeeper or --spawn-zookeeper".into());
    }
    Ok(out)
}

/// Populates each spawned server and reads its VmRSS before and after; a target we did not
/// start has no PID we may read, so it gets `null`.
async fn measure_memory(targets: &[Target], n: u64, value_size: usize, seed: u64) -> Result<Value, String> {
    let mut out = serde_json::Map::new();
    for t in targets {
        let Some(pid) = t.spawned.as_ref().map(spawn::Spawned::pid) else {
            out.insert(t.label.into(), json!(null));
            continue;
        };
        let before = spawn::rss_bytes(pid);
        let start = std::time::Instant::now();
        load::populate(t.addr, n, value_size, seed).await.map_err(|e| format!("{} populate: {e}", t.label))?;
        let took = start.elapsed();
        // Let a JVM finish the collection the burst started before reading RSS.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = spawn::rss_bytes(pid);
        let per_znode = match (before, after) {
            (Some(b), Some(a)) => json!(a.saturating_sub(b) as f64 / n as f64),
            _ => json!(null),
        };
        println!(
            "  memory {:<11} {n} znodes of {value_size} B: RSS {:.1} -> {:.1} MiB ({} B/znode), populate {took:?}",
            t.label,
            before.unwrap_or(0) as f64 / 1048576.0,
            after.unwrap_or(0) as f64 / 1048576.0,
            per_znode
        );
        out.insert(
            t.label.into(),
            json!({"znodes": n, "value_size": value_size, "rss_before": before, "rss_after": after,
                   "bytes_per_znode": per_znode, "populate_s": took.as_secs_f64()}),
        );
    }
    Ok(Value::Object(out))
}
