//! The conformance catalogue against a real ClickHouse Keeper in a container (the image that
//! `compose/docker-compose.yml` pins), with testkeeper's keeper flavor as the target.
//!
//! Behind the `docker` feature (testcontainers costs minutes of build time here):
//! `cargo test -p testkeeper-tests --features docker --test conformance_docker -- --nocapture`.
//! Without a Docker engine it skips, also under `TESTKEEPER_REQUIRE_EXTERNAL=1`: CI machines
//! here have the `docker` CLI but no daemon, and that is not something CI can install.
//! Set `TESTKEEPER_CONFORMANCE_STRICT=1` to fail on unexpected differences instead of only
//! reporting them.
#![cfg(feature = "docker")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use testcontainers::core::{IntoContainerPort, Mount};
use testcontainers::runners::SyncRunner;
use testcontainers::{GenericImage, ImageExt};
use testkeeper_tests::env::docker_unavailable;
use testkeeper_tests::{repo_root, testkeeper_bin, TestkeeperProcess};

/// The image and tag pinned in compose/docker-compose.yml.
const KEEPER_IMAGE: (&str, &str) = ("clickhouse/clickhouse-keeper", "25.8");

/// Waits until `ruok` answers `imok` (Keeper accepts connections before raft is up).
fn wait_ready(addr: SocketAddr, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut out = String::new();
            if s.write_all(b"ruok").is_ok() && s.read_to_string(&mut out).is_ok() && out.contains("imok") {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    false
}

#[test]
fn keeper_flavor_against_real_clickhouse_keeper() {
    // Not `require_external!`: no Docker is never a CI failure, whatever the env says.
    if let Some(reason) = docker_unavailable() {
        eprintln!("skipping: no Docker engine ({reason})");
        return;
    }
    let config = repo_root().join("compose/keeper_config.xml");
    let keeper = GenericImage::new(KEEPER_IMAGE.0, KEEPER_IMAGE.1)
        .with_exposed_port(9181.tcp())
        .with_mount(Mount::bind_mount(config.display().to_string(), "/etc/clickhouse-keeper/keeper_config.xml"))
        .start()
        .expect("start the clickhouse-keeper container");
    let port = keeper.get_host_port_ipv4(9181.tcp()).expect("published Keeper port");
    let reference = SocketAddr::from(([127, 0, 0, 1], port));
    assert!(wait_ready(reference, Duration::from_secs(60)), "Keeper at {reference} never answered ruok");

    let tk = TestkeeperProcess::start(&["--flavor", "keeper"]);
    let dir = tempfile::tempdir().unwrap();
    let (json, md) = (dir.path().join("report.json"), dir.path().join("report.md"));
    let out = Command::new(testkeeper_bin())
        .args(["conform", "--target", &tk.addr().to_string(), "--reference", &reference.to_string()])
        .args(["--flavor", "keeper", "--json", json.to_str().unwrap(), "--markdown", md.to_str().unwrap()])
        .output()
        .expect("run testkeeper conform");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no report: {e}\n{text}")))
            .expect("report JSON");
    assert_eq!(report["reference"]["flavor"], "keeper", "the container must be detected as Keeper: {text}");
    eprintln!("{}", std::fs::read_to_string(&md).unwrap_or_default());
    let strict = std::env::var("TESTKEEPER_CONFORMANCE_STRICT").is_ok_and(|v| v == "1");
    assert!(!strict || out.status.success(), "unexpected differences against real Keeper:\n{text}");
}
