//! Shared by `tests/tests/clickhouse_chdb.rs` and `clickhouse_server.rs`
//! (included with `#[path]`, so it is compiled into each test binary and not
//! part of the `testkeeper-tests` library, which other helpers own).
//!
//! # Layout
//! * [`Target`]: the server ClickHouse talks to (testkeeper in a flavor, or
//!   Apache ZooKeeper 3.8 as the reference, or ZooKeeper behind `testkeeper proxy`
//!   with an oracle cross-checking every request);
//! * [`WireLog`] (`wire_log.rs`): the logging proxy `zk_wire_log.py` in front
//!   of it, which records each request's opcode and its reply's error code;
//! * [`dump_tree`] / [`tree_diff`] (`tree.rs`): the znodes ClickHouse left
//!   behind (`zktree.py`, through kazoo) and their comparison across servers;
//! * [`venv_has`]: prerequisite probes for the Python side.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use testkeeper_tests::env::{repo_root, testkeeper_bin, venv_python};
use testkeeper_tests::proxy::{ProxyProcess, ProxyResult};
use testkeeper_tests::{TestkeeperProcess, ZooKeeperProcess};

#[path = "tree.rs"]
mod tree;
#[path = "wire_log.rs"]
mod wire_log;

#[allow(unused_imports)] // each test binary uses a different subset
pub use tree::{children, dump_tree, find, tree_diff, tree_from_json, ZNode};
#[allow(unused_imports)]
pub use wire_log::{op_name, WireLog, WireOp};

/// A helper script under `tests/clickhouse/`.
pub fn script(name: &str) -> PathBuf {
    repo_root().join("tests").join("clickhouse").join(name)
}

/// True when the test venv's python can import every module in `modules`
/// (probed with `find_spec`, which does not run them).
pub fn venv_has(modules: &[&str]) -> bool {
    let python = venv_python();
    if !python.is_file() {
        return false;
    }
    let list = modules.iter().map(|m| format!("'{m}'")).collect::<Vec<_>>().join(", ");
    let probe = format!("import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ({list},)))");
    Command::new(python)
        .args(["-c", &probe])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Our own binary is not an external prerequisite: missing means broken.
pub fn assert_testkeeper_built() {
    let bin = testkeeper_bin();
    assert!(
        bin.is_file(),
        "testkeeper binary not found at {}: build it with `cargo build -p testkeeper` \
         (`make test` does) or set TESTKEEPER_BIN",
        bin.display()
    );
}

/// The ZooKeeper-protocol server under test.
pub enum Target {
    Testkeeper(TestkeeperProcess),
    ZooKeeper(ZooKeeperProcess),
    /// Apache ZooKeeper 3.8 behind `testkeeper proxy` (its oracle: embedded, or the given
    /// testkeeper); clients connect to the proxy.
    Proxied(Box<Proxied>),
}

/// ZooKeeper, the proxy in front of it, and the oracle the proxy was given (if not embedded).
pub struct Proxied {
    zk: ZooKeeperProcess,
    proxy: ProxyProcess,
    _oracle: Option<TestkeeperProcess>,
}

impl Target {
    pub fn testkeeper(args: &[&str]) -> Self {
        Target::Testkeeper(TestkeeperProcess::start(args))
    }

    pub fn zookeeper() -> Self {
        Target::ZooKeeper(ZooKeeperProcess::start())
    }

    /// ZooKeeper behind the proxy, cross-checked by an embedded zookeeper-flavor testkeeper,
    /// or (`oracle_args`) by a `testkeeper serve` started with those arguments.
    pub fn proxied_zookeeper(oracle_args: Option<&[&str]>) -> Self {
        let zk = ZooKeeperProcess::start();
        let oracle = oracle_args.map(TestkeeperProcess::start);
        let proxy = match &oracle {
            Some(o) => ProxyProcess::start(&zk.connect_string(), &["--oracle", &o.connect_string()]),
            None => ProxyProcess::start(&zk.connect_string(), &[]),
        };
        Target::Proxied(Box::new(Proxied { zk, proxy, _oracle: oracle }))
    }

    pub fn connect_string(&self) -> String {
        match self {
            Target::Testkeeper(t) => t.connect_string(),
            Target::ZooKeeper(z) => z.connect_string(),
            Target::Proxied(p) => p.proxy.addr().to_string(),
        }
    }

    pub fn four_letter_word(&self, word: &str) -> std::io::Result<String> {
        match self {
            Target::Testkeeper(t) => t.four_letter_word(word),
            Target::ZooKeeper(z) => z.four_letter_word(word),
            Target::Proxied(p) => p.zk.four_letter_word(word),
        }
    }

    pub fn log_tail(&self, n: usize) -> String {
        match self {
            Target::Testkeeper(t) => t.log_tail(n),
            Target::ZooKeeper(z) => z.log_tail(n),
            Target::Proxied(p) => p.zk.log_tail(n),
        }
    }

    /// Stops the proxy of a proxied target and returns what it reported.
    pub fn stop_proxy(self) -> Option<ProxyResult> {
        match self {
            Target::Proxied(p) => Some(p.proxy.stop()),
            _ => None,
        }
    }

    /// `zk_znode_count` from `mntr` (both servers report it).
    pub fn znode_count(&self) -> Option<usize> {
        let mntr = self.four_letter_word("mntr").ok()?;
        mntr.lines().find_map(|l| l.strip_prefix("zk_znode_count\t")).and_then(|v| v.trim().parse().ok())
    }
}

/// The message of a panic payload (from `JoinHandle::join` or
/// `catch_unwind`).
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload.downcast_ref::<&str>().map_or_else(|| "panicked".to_string(), |s| s.to_string()),
    }
}

/// Runs an assertion block, turning its panic into an `Err` so a test can
/// report every failed check at once.
pub fn check(f: impl FnOnce()) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(panic_message)
}

/// Seconds with one decimal, for timing lines.
pub fn secs(since: Instant) -> String {
    format!("{:.1}s", since.elapsed().as_secs_f64())
}
