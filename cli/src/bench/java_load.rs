//! `bench --cluster --java`: each cluster workload run a second time with an independent
//! client, Apache ZooKeeper's own Java client, through `scripts/bench-java/LoadGen.java`
//! (compiled here by `javac` against Debian's zookeeper.jar). It connects to the same members
//! in the same order as `testkeeper bench`'s sessions, so the two clients' ratios differ only
//! by the client: a ratio that held with ours alone could be our client's doing.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::cluster::Shape;
use super::stats::median;

/// The load generator's source, compiled at run time.
const LOADGEN_JAVA: &str = include_str!("../../../scripts/bench-java/LoadGen.java");
/// Apache ZooKeeper's client (its manifest's Class-Path brings netty and the rest).
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Why the Java client could not run, or failed.
#[derive(Debug, thiserror::Error)]
pub enum JavaLoadError {
    #[error("{ZOOKEEPER_JAR} not installed (Debian's zookeeper package)")]
    NoJar,
    /// A file, directory or process step failed; `what` says which.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("javac LoadGen.java failed: {0}")]
    Compile(String),
    #[error("class path: {0}")]
    ClassPath(#[from] std::env::JoinPathsError),
    /// LoadGen exited with an error or printed no JSON: its status and the end of its stderr.
    #[error("LoadGen failed ({status}): {stderr}")]
    Run { status: std::process::ExitStatus, stderr: String },
    /// A run on one of the clusters failed.
    #[error("{cluster}: {source}")]
    On { cluster: &'static str, source: Box<JavaLoadError> },
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> JavaLoadError {
    move |source| JavaLoadError::Io { what, source }
}

/// What one LoadGen run is asked for.
#[derive(Debug, Clone, Copy)]
pub struct JavaRun<'a> {
    pub members: &'a [SocketAddr],
    pub sessions: usize,
    pub mix: &'a str,
    pub ops: u64,
    pub keys: u32,
    pub value_size: usize,
    pub seed: u64,
}

/// A compiled LoadGen, in a directory of its own that goes when this does.
#[derive(Debug)]
pub struct JavaLoad {
    dir: PathBuf,
}

impl JavaLoad {
    /// Compiles LoadGen.
    ///
    /// # Errors
    /// Why it cannot run here: no zookeeper.jar, no javac, a compile error.
    pub fn prepare() -> Result<JavaLoad, JavaLoadError> {
        if !Path::new(ZOOKEEPER_JAR).is_file() {
            return Err(JavaLoadError::NoJar);
        }
        let dir = std::env::temp_dir().join(format!("testkeeper-bench-loadgen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
        let load = JavaLoad { dir };
        let src = load.dir.join("LoadGen.java");
        std::fs::write(&src, LOADGEN_JAVA).map_err(io(format!("writing {}", src.display())))?;
        // -implicit:none: javac must not compile sources it finds on the classpath.
        let out = Command::new("javac")
            .args(["-implicit:none", "-cp", ZOOKEEPER_JAR, "-d"])
            .arg(&load.dir)
            .arg(&src)
            .stdin(Stdio::null())
            .output()
            .map_err(io("running javac (a JDK)".into()))?;
        if !out.status.success() {
            return Err(JavaLoadError::Compile(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        Ok(load)
    }

    /// One measured run (LoadGen warms its own JVM with a quarter of `ops` first): its JSON
    /// (`ops_per_sec`, `p99_us`, `errors`, `client_cpu_s`...).
    ///
    /// # Errors
    /// LoadGen could not start, failed or printed no JSON.
    pub fn run(&self, r: &JavaRun<'_>) -> Result<Value, JavaLoadError> {
        let connect: Vec<String> = r.members.iter().map(SocketAddr::to_string).collect();
        let cp = std::env::join_paths([self.dir.as_os_str(), ZOOKEEPER_JAR.as_ref()])?;
        let out = Command::new(std::env::var_os("JAVA").unwrap_or_else(|| "java".into()))
            .arg("-cp")
            .arg(cp)
            .arg("LoadGen")
            .args(["--connect", &connect.join("|"), "--sessions", &r.sessions.to_string(), "--window", "1"])
            .args(["--ops", &r.ops.to_string(), "--keys", &r.keys.to_string()])
            .args(["--value-size", &r.value_size.to_string(), "--mix", r.mix])
            // A Java long: the seed's low 62 bits.
            .args(["--seed", &(r.seed & (u64::MAX >> 2)).to_string()])
            .stdin(Stdio::null())
            .output()
            .map_err(io("running java".into()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(v) if out.status.success() => Ok(v),
            _ => {
                let err = String::from_utf8_lossy(&out.stderr);
                let tail: Vec<&str> = err.lines().rev().take(6).collect();
                Err(JavaLoadError::Run {
                    status: out.status,
                    stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
                })
            }
        }
    }
}

/// The same workload through the Java client on both clusters, rounds alternating as ours
/// do; the JSON of the workload's `java` field.
///
/// # Errors
/// A LoadGen run that failed, with the cluster it ran on.
pub fn java_rounds(java: &JavaLoad, shape: &Shape<'_>) -> Result<Value, JavaLoadError> {
    let Shape { clusters, placed, plan, name, mix, sessions } = *shape;
    let mut runs: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    for r in 0..plan.rounds {
        for i in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
            let run = JavaRun {
                members: &placed[i],
                sessions,
                mix,
                ops: plan.ops,
                keys: plan.keys,
                value_size: plan.value_size,
                seed: plan.seed.wrapping_add(r as u64),
            };
            let res = tokio::task::block_in_place(|| java.run(&run))
                .map_err(|e| JavaLoadError::On { cluster: clusters[i].label, source: Box::new(e) })?;
            println!(
                "  java {name:<6} {sessions:>2} session(s) round {r} {:<10} {:>8.0} ops/s  p99 {:>6} us  errors {}",
                clusters[i].label,
                res["ops_per_sec"].as_f64().unwrap_or(0.0),
                res["p99_us"],
                res["errors"]
            );
            runs[i].push(res);
        }
    }
    let field = |i: usize, k: &str| runs[i].iter().map(|v| v[k].as_f64().unwrap_or(f64::NAN)).collect::<Vec<_>>();
    let ratio = |k: &str| median(&field(0, k).iter().zip(field(1, k)).map(|(a, b)| a / b.max(1.0)).collect::<Vec<_>>());
    let out = json!({
        "testkeeper_ops_per_sec": field(0, "ops_per_sec"), "zookeeper_ops_per_sec": field(1, "ops_per_sec"),
        "testkeeper_p99_us": field(0, "p99_us"), "zookeeper_p99_us": field(1, "p99_us"),
        "throughput_ratio": ratio("ops_per_sec"), "p99_ratio": ratio("p99_us"),
        "errors": field(0, "errors").iter().chain(&field(1, "errors")).sum::<f64>(),
        "client_cpu_s": [field(0, "client_cpu_s"), field(1, "client_cpu_s")],
        "seconds": [field(0, "seconds"), field(1, "seconds")],
    });
    println!(
        "  java {name} x{sessions}: testkeeper / zookeeper throughput x{:.2}, p99 x{:.2}",
        out["throughput_ratio"].as_f64().unwrap_or(0.0),
        out["p99_ratio"].as_f64().unwrap_or(0.0)
    );
    Ok(out)
}

impl Drop for JavaLoad {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
