//! `testkeeper publish --chaos --target --admin` against a separate `testkeeper serve --http`:
//! the sweep's fault rules go in, and what fired comes back, through the HTTP admin API
//! (docs/publisher.md). Two sweeps share the server at once, each run under its own root,
//! and must not disturb each other; a deliberately broken publisher must still be caught.

use std::process::Command;
use std::time::Duration;

use testkeeper_tests::env::testkeeper_bin;
use testkeeper_tests::process::{run_bounded, BoundedOutput};
use testkeeper_tests::TestkeeperProcess;

/// A full sweep is ~70 short runs of well under 100 ms each; minutes means stuck.
const SWEEP_TIMEOUT: Duration = Duration::from_secs(180);
const HTTP_PREFIX: &str = "testkeeper http listening on ";

/// The admin address `serve` printed on stderr (before its readiness line, so it is there).
fn admin_url(server: &TestkeeperProcess) -> String {
    let log = server.log_tail(200);
    let addr = log.lines().find_map(|l| l.strip_prefix(HTTP_PREFIX));
    format!("http://{}", addr.unwrap_or_else(|| panic!("no `{HTTP_PREFIX}<addr>` in the log:\n{log}")).trim())
}

fn sweep(server: &TestkeeperProcess, admin: &str, extra: &[&str]) -> BoundedOutput {
    let mut cmd = Command::new(testkeeper_bin());
    cmd.args(["publish", "--chaos", "--hosts", "2", "--seed", "7", "--target"])
        .arg(server.addr().to_string())
        .args(["--admin", admin])
        .args(extra)
        .env("RUST_LOG", "warn");
    run_bounded(&mut cmd, b"", SWEEP_TIMEOUT).expect("running testkeeper publish --chaos")
}

/// The summary line: `chaos: seed S, N runs under ROOT, ...`.
fn summary(out: &BoundedOutput) -> &str {
    out.stdout.lines().find(|l| l.starts_with("chaos: ")).unwrap_or_else(|| panic!("no summary:\n{}", out.combined()))
}

#[test]
fn sweeps_a_running_server_through_its_admin_api() {
    let server = TestkeeperProcess::start(&["--http", "127.0.0.1:0"]);
    let admin = admin_url(&server);

    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| sweep(&server, &admin, &["--max-runs", "6"]));
        let b = s.spawn(|| sweep(&server, &admin, &["--max-runs", "6"]));
        (a.join().unwrap(), b.join().unwrap())
    });
    for out in [&a, &b] {
        assert!(out.success(), "sweep failed:\n{}\nserver:\n{}", out.combined(), server.log_tail(20));
        assert!(summary(out).contains(", 7 runs under /testkeeper_chaos/"), "{}", summary(out));
        let held = out.stdout.lines().filter(|l| l.starts_with("run ") && l.contains("  invariants hold  ")).count();
        assert_eq!(held, 7, "{}", out.stdout);
        assert!(out.stdout.contains("reply to request 1 dropped ("), "the op hit is named: {}", out.stdout);
        // The faults really went through the server: its events came back and were counted.
        assert!(!summary(out).contains(" 0 faults fired"), "{}", summary(out));
    }
    assert_ne!(summary(&a), summary(&b), "each sweep has a root of its own");

    let broken = sweep(&server, &admin, &["--break", "retry-authority-mutation"]);
    assert!(!broken.success(), "the broken publisher was not caught:\n{}", broken.combined());
    assert!(broken.stdout.contains("violation: server saw"), "{}", broken.stdout);
    assert!(broken.stderr.contains("violated the invariants"), "{}", broken.stderr);
    assert!(broken.stdout.contains("      replay: testkeeper publish --chaos --target "), "{}", broken.stdout);
    assert!(broken.stderr.contains(" --index "), "{}", broken.stderr);

    // Every rule the sweeps installed was removed again.
    let rules: serde_json::Value = serde_json::from_str(&http_get(&admin, "/api/v1/faults")).unwrap();
    assert_eq!(rules["rules"], serde_json::json!([]), "rules left behind");
}

/// The body of `GET path`, which must answer 200.
fn http_get(admin: &str, path: &str) -> String {
    let addr = admin.trim_start_matches("http://").parse().expect("admin address");
    let (status, body) = testkeeper_tests::net::http(addr, "GET", path, "").expect("admin reply");
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}
