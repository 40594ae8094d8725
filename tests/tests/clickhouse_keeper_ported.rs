//! ClickHouse's own Keeper integration tests that talk through kazoo, ported to pytest in
//! tests/keeper_ported/ and run against a Debian ZooKeeper ("genuine") and testkeeper's keeper
//! flavor ("fake"), as upstream runs Keeper beside a ZooKeeper container:
//! - `test_keeper_back_to_back`: every request to both, answers compared;
//! - `test_keeper_auth`: digest and `auth` ACLs, partial permissions, super auth, refused auth
//!   and ACLs, world:anyone permissions, ACLs after a restart (a durable testkeeper killed and
//!   started again), getACL/setACL.

use std::process::Command;
use std::time::Duration;

use testkeeper_tests::env::{kazoo_venv_ready, repo_root, testkeeper_bin, zookeeper_installed};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::{require_external, venv_python, TestkeeperProcess, ZooKeeperProcess};

/// back-to-back 9, auth 26 (five run on both servers).
const PASSED: usize = 35;

fn pytest(genuine: &str, fake: &str) -> String {
    let out = run_bounded(
        Command::new(venv_python())
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-s"])
            .arg(repo_root().join("tests/keeper_ported"))
            .env("GENUINE_HOSTS", genuine)
            .env("FAKE_HOSTS", fake)
            .env("TESTKEEPER_BIN", testkeeper_bin())
            .current_dir(repo_root()),
        b"",
        Duration::from_secs(600),
    )
    .expect("run pytest");
    let text = out.combined();
    assert!(out.success(), "back-to-back against {fake}:\n{text}");
    assert!(text.contains(&format!("{PASSED} passed")), "{text}");
    text
}

#[test]
fn clickhouses_kazoo_keeper_tests_pass_on_the_keeper_flavor() {
    require_external!("kazoo venv", kazoo_venv_ready());
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    // `super:admin`, as upstream's Keeper configuration has it.
    let tk = TestkeeperProcess::start(&["--flavor", "keeper", "--super-digest", "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="]);
    let text = pytest(&zk.connect_string(), &tk.connect_string());
    eprintln!("{}", text.lines().find(|l| l.contains("seed")).unwrap_or_default());
}
