//! `bench --cluster`: a 3-node testkeeper cluster against a 3-server ZooKeeper 3.8 ensemble,
//! both started by the bench on this machine, in one run:
//!
//! - writes (`set`) and reads (`get`) at each of `--cluster-sessions` (default 1 and 32),
//!   the sessions spread over the three members in turn, rounds alternating between the two
//!   clusters; ratios are medians of per-round ratios; with `--java`, each again through
//!   Apache ZooKeeper's Java client (`java_load`);
//! - leader kill to the first acknowledged write (`failover`): `--rounds` kills each, the
//!   clusters alternating, and `--failover-rounds` more of the testkeeper cluster alone;
//! - in-process start to a leader: `TestKeeperCluster::start(3)` to `await_leader`, against
//!   Curator's `TestingCluster(3)` to the first `srvr` that says `Mode: leader`, inside one
//!   JVM (`ClusterStart.java`, Debian's libcurator-test-java), when it is installed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;

use super::ensemble::{Ensemble, Kind};
use super::failover;
use super::java_load::{java_rounds, JavaLoad};
use super::load::{self, LoadConfig};
use super::mix::Mix;
use super::stats::median;

/// The Curator side of the start measurement, compiled by `java` from source at run time.
const CLUSTER_START_JAVA: &str = include_str!("../../../scripts/bench-java/ClusterStart.java");
const CURATOR_TEST_JAR: &str = "/usr/share/java/curator-test.jar";
/// Classpath of `ClusterStart.java` besides curator-test (zookeeper.jar's manifest brings the rest).
const CURATOR_CP: [&str; 3] =
    ["/usr/share/java/zookeeper.jar", "/usr/share/java/guava.jar", "/usr/share/java/slf4j-nop.jar"];

/// What `--cluster` runs.
#[derive(Debug, Clone)]
pub struct ClusterPlan {
    pub sessions: Vec<usize>,
    pub ops: u64,
    pub warmup: u64,
    pub rounds: usize,
    pub pipeline: usize,
    pub keys: u32,
    pub value_size: usize,
    /// `--decode-replies` (`LoadConfig::decode_replies`).
    pub decode_replies: bool,
    pub seed: u64,
    /// Run each workload with the Java client too.
    pub java: bool,
    /// Leader kills of the testkeeper cluster alone after the paired rounds (`failover`).
    pub failover_rounds: usize,
}

/// Runs the whole comparison and returns its JSON.
///
/// # Errors
/// A cluster that cannot start, a workload that fails, or a failover that never ends.
pub async fn run(plan: &ClusterPlan) -> Result<Value, String> {
    let seed = plan.seed;
    let mut clusters = tokio::task::spawn_blocking(move || {
        Ok::<_, String>([Ensemble::start(Kind::Testkeeper, seed)?, Ensemble::start(Kind::ZooKeeper, seed)?])
    })
    .await
    .map_err(|e| e.to_string())??;
    // Sessions go to the members in turn, the followers first, in both clusters alike: whether
    // a lone session sits on the leader (its write crosses one round trip to the followers) or
    // on a follower (forwarded to the leader first) moves its figures a lot, and which member
    // leads differs between runs. A follower is where most of a cluster's clients are.
    let mut leaders = Vec::new();
    let mut placed: Vec<Vec<SocketAddr>> = Vec::new();
    for e in &mut clusters {
        let leader = tokio::task::block_in_place(|| e.await_whole())?;
        println!(
            "  {:<10} members {} (member {} leads)",
            e.label,
            e.addrs.iter().map(SocketAddr::to_string).collect::<Vec<_>>().join(","),
            leader + 1
        );
        placed.push([e.followers(leader), vec![e.addrs[leader]]].concat());
        leaders.push(leader + 1);
    }
    let java = match plan.java.then(JavaLoad::prepare) {
        Some(Err(why)) => {
            println!("  the Java client's rounds are skipped: {why}");
            Err(why.to_string())
        }
        Some(Ok(j)) => Ok(Some(j)),
        None => Ok(None),
    };
    let mut workloads = Vec::new();
    for (name, mix) in [("writes", "set=100"), ("reads", "get=100")] {
        for &sessions in &plan.sessions {
            let shape = Shape { clusters: &clusters, placed: &placed, plan, name, mix, sessions };
            let mut w = throughput(&shape).await.map_err(|e| e.to_string())?;
            match &java {
                Ok(Some(j)) => w["java"] = java_rounds(j, &shape).map_err(|e| e.to_string())?,
                Err(why) => w["java"] = json!({ "skipped": why }),
                Ok(None) => {}
            }
            workloads.push(w);
        }
    }
    let failover = failover::failovers(&mut clusters, plan).await.map_err(|e| e.to_string())?;
    drop(clusters);
    let start = starts(plan.rounds.max(3), seed).await?;
    let leaders = json!({ "testkeeper": leaders[0], "zookeeper": leaders[1] });
    Ok(json!({ "workloads": workloads, "failover": failover, "start": start, "leaders_at_start": leaders }))
}

/// One workload at one session count, on both clusters: what a client runs and where.
pub struct Shape<'a> {
    pub clusters: &'a [Ensemble; 2],
    /// Each cluster's members in the order sessions take them.
    pub placed: &'a [Vec<SocketAddr>],
    pub plan: &'a ClusterPlan,
    pub name: &'a str,
    pub mix: &'a str,
    pub sessions: usize,
}

/// Why a cluster workload could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("mix {mix}: {why}")]
    Mix { mix: String, why: String },
    /// The load did not run: its sessions did not connect, or a request was lost.
    #[error("{cluster} {phase}: {why}")]
    Load { cluster: &'static str, phase: &'static str, why: String },
    /// The load ran, and some reply was an error the workload does not expect.
    #[error("{cluster} {workload} x{sessions}: {errors}")]
    Unexpected { cluster: &'static str, workload: String, sessions: usize, errors: String },
}

/// One workload at one session count on both clusters, rounds alternating.
async fn throughput(shape: &Shape<'_>) -> Result<Value, WorkloadError> {
    let Shape { clusters, placed, plan, name, mix, sessions } = *shape;
    let cfg = LoadConfig {
        sessions,
        ops: plan.ops,
        pipeline: plan.pipeline,
        keys: plan.keys,
        value_size: plan.value_size,
        mix: Mix::parse(mix).map_err(|why| WorkloadError::Mix { mix: mix.to_string(), why })?,
        decode_replies: plan.decode_replies,
    };
    let failed = |cluster, phase| move |why| WorkloadError::Load { cluster, phase, why };
    if plan.warmup > 0 {
        let warm = LoadConfig { ops: plan.warmup, ..cfg.clone() };
        for (e, addrs) in clusters.iter().zip(placed) {
            load::run_on(addrs, &warm, plan.seed ^ 0x5757).await.map_err(failed(e.label, "warm-up"))?;
        }
    }
    let (mut ops_s, mut p99) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for r in 0..plan.rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let e = &clusters[i];
            let (rec, elapsed) = load::run_on(&placed[i], &cfg, plan.seed.wrapping_add(r as u64))
                .await
                .map_err(failed(e.label, "round"))?;
            if rec.unexpected_errors() > 0 {
                let (workload, errors) = (name.to_string(), rec.describe_errors());
                return Err(WorkloadError::Unexpected { cluster: e.label, workload, sessions, errors });
            }
            ops_s[i].push(rec.count() as f64 / elapsed.as_secs_f64().max(1e-9));
            p99[i].push(rec.p99_us() as f64);
            println!(
                "  {name:<6} {sessions:>2} session(s) round {r} {:<10} {:>8.0} ops/s  p99 {:>6} us",
                e.label,
                ops_s[i][r],
                rec.p99_us()
            );
        }
    }
    let ratio = |x: &[f64], y: &[f64]| median(&x.iter().zip(y).map(|(a, b)| a / b).collect::<Vec<_>>());
    let out = json!({
        "workload": name, "mix": mix, "sessions": sessions, "pipeline": plan.pipeline,
        "testkeeper_ops_per_sec": ops_s[0], "zookeeper_ops_per_sec": ops_s[1],
        "testkeeper_p99_us": p99[0], "zookeeper_p99_us": p99[1],
        "throughput_ratio": ratio(&ops_s[0], &ops_s[1]), "p99_ratio": ratio(&p99[0], &p99[1]),
    });
    println!(
        "  {name} x{sessions}: testkeeper / zookeeper throughput x{:.2}, p99 x{:.2}",
        out["throughput_ratio"].as_f64().unwrap_or(0.0),
        out["p99_ratio"].as_f64().unwrap_or(0.0)
    );
    Ok(out)
}

/// In-process start of a 3-node cluster to its first leader: ours, and Curator's.
async fn starts(n: usize, seed: u64) -> Result<Value, String> {
    let mut ours = Vec::new();
    for i in 0..n {
        let t0 = Instant::now();
        let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), seed.wrapping_add(i as u64))
            .await
            .map_err(|e| format!("TestKeeperCluster::start: {e}"))?;
        c.await_leader(Duration::from_secs(10)).await.map_err(|e| format!("TestKeeperCluster: {e}"))?;
        ours.push(t0.elapsed().as_secs_f64() * 1e3);
        c.shutdown().await;
    }
    println!("  TestKeeperCluster::start(3) to a leader: median {:.1} ms of {n} ({ours:.1?})", median(&ours));
    let curator = tokio::task::spawn_blocking(move || curator_starts(n)).await.map_err(|e| e.to_string())?;
    let curator = match curator {
        Ok(ms) => {
            let ratio = median(&ours) / median(&ms);
            println!(
                "  Curator TestingCluster(3) to a leader: median {:.1} ms of {n} ({ms:.1?}); ratio x{ratio:.4}",
                median(&ms)
            );
            json!({ "samples_ms": ms, "median_ms": median(&ms), "ratio": ratio })
        }
        Err(why) => {
            println!("  Curator TestingCluster not measured: {why}");
            json!({ "skipped": why })
        }
    };
    Ok(json!({ "testkeeper_samples_ms": ours, "testkeeper_median_ms": median(&ours), "curator": curator }))
}

/// Runs `ClusterStart.java` for `n` starts in one JVM; each start's milliseconds.
fn curator_starts(n: usize) -> Result<Vec<f64>, String> {
    let missing: Vec<&str> =
        [CURATOR_TEST_JAR].into_iter().chain(CURATOR_CP).filter(|p| !std::path::Path::new(p).is_file()).collect();
    if !missing.is_empty() {
        return Err(format!("{} not installed (Debian libcurator-test-java, libslf4j-java)", missing.join(", ")));
    }
    let dir = std::env::temp_dir().join(format!("testkeeper-bench-curator-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let src = dir.join("ClusterStart.java");
    std::fs::write(&src, CLUSTER_START_JAVA).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let cp = std::env::join_paths([CURATOR_TEST_JAR].into_iter().chain(CURATOR_CP)).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(std::env::var_os("JAVA").unwrap_or_else(|| "java".into()))
        .current_dir(&dir)
        .arg("-cp")
        .arg(cp)
        .arg(&src)
        .arg(n.to_string())
        .stdin(std::process::Stdio::null())
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.map_err(|e| format!("running java: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let ms: Vec<f64> =
        text.lines().filter_map(|l| l.strip_prefix("start_to_leader_ms ")?.trim().parse().ok()).collect();
    if !out.status.success() || ms.len() != n {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(10).collect();
        return Err(format!(
            "ClusterStart.java failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(ms)
}
