//! The conformance suite's cluster scenarios against real 3-node clusters in containers
//! (`compose/cluster.yml`: ClickHouse Keeper with the digest on, and an Apache ZooKeeper 3.8
//! ensemble), each compared with a 3-process testkeeper cluster of the same flavor
//! (`testkeeper conform --target a,b,c --reference x,y,z --filter cluster_`).
//!
//! Needs a Docker engine with the compose plugin; without one it prints why and skips, also
//! under `TESTKEEPER_REQUIRE_EXTERNAL=1` (CI machines here have the CLI but no daemon). Every
//! scenario must run on all three servers; differences fail the test only with
//! `TESTKEEPER_CONFORMANCE_STRICT=1` (otherwise they are printed, report and all), as in
//! conformance_docker.rs.

use std::process::Command;
use std::time::Duration;

use testkeeper_tests::env::{docker_unavailable, repo_root, testkeeper_bin};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::{ClusterOptions, TestkeeperCluster};

/// The compose project of this run: its containers and network, removed on drop.
struct Compose {
    project: String,
}

impl Compose {
    fn command(&self) -> Command {
        let mut c = Command::new("docker");
        let file = repo_root().join("compose/cluster.yml");
        c.args(["compose", "-p", &self.project, "-f"]).arg(file);
        c
    }

    /// `docker compose up --wait`: every service healthy (each node knows its leader).
    fn up() -> Result<Compose, String> {
        let c = Compose { project: format!("testkeeper-cluster-{}", std::process::id()) };
        let out = run_bounded(c.command().args(["up", "-d", "--wait"]), b"", Duration::from_secs(600))
            .map_err(|e| format!("docker compose up: {e}"))?;
        if !out.success() {
            return Err(format!("docker compose up failed:\n{}", out.combined()));
        }
        Ok(c)
    }

    /// The published `127.0.0.1:PORT` of a service's container port.
    fn port(&self, service: &str, port: u16) -> String {
        let out = run_bounded(self.command().args(["port", service, &port.to_string()]), b"", Duration::from_secs(60))
            .expect("docker compose port");
        assert!(out.success(), "docker compose port {service} {port}: {}", out.combined());
        out.stdout.trim().replace("0.0.0.0", "127.0.0.1")
    }

    fn targets(&self, prefix: &str, port: u16) -> String {
        (1..=3).map(|i| self.port(&format!("{prefix}{i}"), port)).collect::<Vec<_>>().join(",")
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        let _ = run_bounded(self.command().args(["down", "-v", "--timeout", "5"]), b"", Duration::from_secs(120));
    }
}

/// Runs the cluster scenarios with `target` and `reference`; returns (succeeded, output, report).
fn conform(target: &str, reference: &str, flavor: &str) -> (bool, String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = run_bounded(
        Command::new(testkeeper_bin())
            .args(["conform", "--target", target, "--reference", reference, "--flavor", flavor])
            .args(["--filter", "cluster_", "--json"])
            .arg(&json),
        b"",
        Duration::from_secs(600),
    )
    .expect("run testkeeper conform");
    let text = out.combined();
    let report = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no report ({e}):\n{text}"));
    (out.success(), text, serde_json::from_str(&report).expect("report JSON"))
}

#[test]
fn cluster_scenarios_against_real_keeper_and_zookeeper_clusters() {
    // Not `require_external!`: no Docker is never a CI failure, whatever the env says.
    if let Some(reason) = docker_unavailable() {
        eprintln!("skipping: no Docker engine ({reason}); compose/cluster.yml needs one");
        return;
    }
    let compose = Compose::up().unwrap_or_else(|e| panic!("{e}"));
    let strict = std::env::var("TESTKEEPER_CONFORMANCE_STRICT").is_ok_and(|v| v == "1");
    for (flavor, prefix, port) in [("keeper", "keeper", 9181), ("zookeeper", "zk", 2181)] {
        let real = compose.targets(prefix, port);
        let mut ours = TestkeeperCluster::start(&ClusterOptions::new(flavor)).unwrap_or_else(|e| panic!("{e}"));
        ours.await_leader(Duration::from_secs(20)).unwrap_or_else(|e| panic!("{e}"));
        let (ok, text, report) = conform(&real, &ours.connect_string(), flavor);
        eprintln!("{flavor}: real cluster {real} against testkeeper {}:\n{text}", ours.connect_string());
        assert_eq!(report["reference"]["flavor"], flavor, "{flavor}: {text}");
        let scenarios = report["scenarios"].as_array().expect("scenarios");
        let ran: Vec<&serde_json::Value> =
            scenarios.iter().filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("cluster_"))).collect();
        assert!(ran.len() >= 9, "{flavor}: every cluster scenario is in the report: {text}");
        assert!(ran.iter().all(|s| s["status"] != "skipped"), "{flavor}: a cluster scenario was skipped: {text}");
        assert!(!strict || ok, "{flavor}: the real cluster differs from testkeeper's:\n{text}");
    }
}
