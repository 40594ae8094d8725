//! Shared by `tests/tests/clickhouse_chdb.rs` and `clickhouse_server.rs`
//! (included with `#[path]`, so it is compiled into each test binary and not
//! part of the `testkeeper-tests` library, which other helpers own).
//!
//! # Layout
//! * [`Target`]: the server ClickHouse talks to (testkeeper in a flavor, or
//!   Apache ZooKeeper 3.8 as the reference, or ZooKeeper behind `testkeeper proxy`
//!   with an oracle cross-checking every request);
//! * [`WireLog`]: the logging proxy `zk_wire_log.py` in front of it, which
//!   records each request's opcode and its reply's error code;
//! * [`dump_tree`] / [`tree_diff`]: the znodes ClickHouse left behind
//!   (`zktree.py`, through kazoo) and their comparison across servers;
//! * [`venv_has`]: prerequisite probes for the Python side.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkeeper_tests::env::{repo_root, testkeeper_bin, venv_python};
use testkeeper_tests::process::{run_bounded, ServerChild};
use testkeeper_tests::proxy::{ProxyProcess, ProxyResult};
use testkeeper_tests::{TestkeeperProcess, ZooKeeperProcess};

/// Upper bound for one `zktree.py` dump (a few hundred znodes take < 2 s).
const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

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

/// One request seen by the proxy, with the error code of its reply
/// (`None`: no reply came before the connection ended).
#[derive(Debug, Clone)]
pub struct WireOp {
    pub conn: u64,
    pub op: i64,
    pub sub_ops: Vec<i64>,
    pub err: Option<i64>,
    pub sub_errs: Vec<String>,
}

/// `tests/clickhouse/zk_wire_log.py` running in front of a server.
pub struct WireLog {
    proxy: ServerChild,
    port: u16,
    log: PathBuf,
}

impl WireLog {
    /// Starts the proxy towards `upstream` (`host:port`), logging to
    /// `dir/<name>.jsonl`.
    pub fn start(upstream: &str, dir: &Path, name: &str) -> Self {
        let log = dir.join(format!("{name}.jsonl"));
        let stderr_log = dir.join(format!("{name}.log"));
        let stderr = std::fs::File::create(&stderr_log).expect("proxy log file");
        let mut child = Command::new(venv_python())
            .arg(script("zk_wire_log.py"))
            .arg(upstream)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawning zk_wire_log.py");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut proxy = ServerChild::from_child("zk_wire_log", child, &stderr_log);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let port = line
            .trim()
            .strip_prefix("zk_wire_log listening on 127.0.0.1:")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("zk_wire_log.py did not start: {}", proxy.describe(20)));
        Self { proxy, port, log }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request recorded so far.
    pub fn ops(&self) -> Vec<WireOp> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                let ints = |v: &Value| -> Vec<i64> {
                    v.as_array().map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default()
                };
                Some(WireOp {
                    conn: v["conn"].as_u64()?,
                    op: v["op"].as_i64()?, // watch events have op "watch"
                    sub_ops: ints(&v["sub"]),
                    err: v["err"].as_i64(),
                    sub_errs: v["sub_err"]
                        .as_array()
                        .map(|a| a.iter().map(|e| e.to_string()).collect())
                        .unwrap_or_default(),
                })
            })
            .collect()
    }

    /// `op[sub ops] err -> count`, for logs and reports.
    pub fn summary(&self) -> String {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for w in self.ops() {
            let subs: BTreeSet<i64> = w.sub_ops.iter().copied().collect();
            let key = format!(
                "{}{} err={}",
                op_name(w.op),
                if subs.is_empty() {
                    String::new()
                } else {
                    format!("[{}]", subs.iter().map(|o| op_name(*o)).collect::<Vec<_>>().join(","))
                },
                w.err.map_or("none".to_string(), |e| e.to_string())
            );
            *counts.entry(key).or_default() += 1;
        }
        counts.iter().map(|(k, n)| format!("  {k}: {n}")).collect::<Vec<_>>().join("\n")
    }

    /// The distinct `(op, reply error)` pairs seen, sub-ops of a multi
    /// included as `multi/<op>`: a timing-independent fingerprint of how a
    /// client used a server, for comparing one server with another. A close
    /// left unanswered is not in it: whether a server answers a close before
    /// it sees the client hang up is a race (a fresh-clone CI run once saw
    /// ZooKeeper 3.8 end chdb's connection without answering its close, where
    /// every other run answered it).
    pub fn op_errors(&self) -> BTreeSet<(String, String)> {
        let mut set = BTreeSet::new();
        for w in self.ops() {
            if w.err.is_none() && op_name(w.op) == "close" {
                continue;
            }
            let err = w.err.map_or("none".to_string(), |e| e.to_string());
            set.insert((op_name(w.op), err));
            for (i, sub) in w.sub_ops.iter().enumerate() {
                let sub_err = w.sub_errs.get(i).cloned().unwrap_or_default();
                set.insert((format!("{}/{}", op_name(w.op), op_name(*sub)), sub_err));
            }
        }
        set
    }

    /// Every opcode used, at top level or inside a multi / multiRead.
    pub fn opcodes(&self) -> BTreeSet<i64> {
        self.ops().iter().flat_map(|w| std::iter::once(w.op).chain(w.sub_ops.iter().copied())).collect()
    }
}

/// Names from ZooKeeper's `OpCode` and Keeper's `OpNum`.
pub fn op_name(op: i64) -> String {
    let name = match op {
        -11 => "close",
        1 => "create",
        2 => "delete",
        3 => "exists",
        4 => "getData",
        5 => "setData",
        8 => "getChildren",
        9 => "sync",
        11 => "ping",
        12 => "getChildren2",
        13 => "check",
        14 => "multi",
        15 => "create2",
        22 => "multiRead",
        100 => "auth",
        101 => "setWatches",
        500 => "filteredList",
        501 => "checkNotExists",
        502 => "createIfNotExists",
        503 => "removeRecursive",
        504 => "checkStat",
        505 => "tryRemove",
        506 => "filteredListWithStatsAndData",
        507 => "listRecursive",
        _ => return format!("op{op}"),
    };
    name.to_string()
}

/// One znode from `zktree.py`.
#[derive(Debug, Clone)]
pub struct ZNode {
    pub path: String,
    /// The path with UUIDs and per-run values masked.
    pub norm: String,
    pub ephemeral: bool,
    pub data: String,
}

/// The whole tree of the server at `hosts`, each `(text, name)` in `masks`
/// replaced by `<name>` in the normalized paths.
pub fn dump_tree(hosts: &str, masks: &[(&str, &str)]) -> Result<Vec<ZNode>, String> {
    let mut cmd = Command::new(venv_python());
    cmd.arg(script("zktree.py")).arg(hosts);
    for (text, name) in masks {
        cmd.arg("--mask").arg(format!("{text}={name}"));
    }
    let out = run_bounded(&mut cmd, b"", DUMP_TIMEOUT).map_err(|e| format!("zktree.py: {e}"))?;
    if !out.success() {
        return Err(format!(
            "zktree.py against {hosts} failed ({:?}, timed out: {}):\n{}",
            out.status,
            out.timed_out(),
            out.stderr
        ));
    }
    let v: Value = serde_json::from_str(out.stdout.trim()).map_err(|e| format!("zktree.py output is not JSON: {e}"))?;
    Ok(tree_from_json(&v))
}

/// Parses the tree embedded in a workload report (same shape as above).
pub fn tree_from_json(v: &Value) -> Vec<ZNode> {
    v.as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|n| ZNode {
            path: n["path"].as_str().unwrap_or_default().to_string(),
            norm: n["norm"].as_str().unwrap_or_default().to_string(),
            ephemeral: n["ephemeral"].as_bool().unwrap_or_default(),
            data: n["data"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

pub fn find<'a>(tree: &'a [ZNode], path: &str) -> Option<&'a ZNode> {
    tree.iter().find(|n| n.path == path)
}

/// Names of the direct children of `path`.
pub fn children<'a>(tree: &'a [ZNode], path: &str) -> Vec<&'a str> {
    let prefix = format!("{}/", path.trim_end_matches('/'));
    tree.iter().filter_map(|n| n.path.strip_prefix(&prefix)).filter(|rest| !rest.contains('/')).collect()
}

/// The servers' own znodes, which differ by design between Keeper and
/// ZooKeeper (`/keeper/api_version`, `/zookeeper/config`, ...), are left
/// out of comparisons.
fn is_system(norm: &str) -> bool {
    ["/keeper", "/zookeeper"].iter().any(|p| norm == *p || norm.starts_with(&format!("{p}/")))
}

/// Differences between the normalized trees (path and ephemeral flag),
/// one line each; empty when they agree.
pub fn tree_diff(ours: &[ZNode], reference: &[ZNode]) -> Vec<String> {
    let index = |t: &[ZNode]| -> BTreeMap<String, bool> {
        t.iter().filter(|n| !is_system(&n.norm)).map(|n| (n.norm.clone(), n.ephemeral)).collect()
    };
    let (a, b) = (index(ours), index(reference));
    let mut diff = Vec::new();
    for (path, eph) in &a {
        match b.get(path) {
            None => diff.push(format!("only on testkeeper: {path}")),
            Some(e) if e != eph => diff.push(format!("{path}: ephemeral={eph} on testkeeper, {e} on ZooKeeper")),
            Some(_) => {}
        }
    }
    for path in b.keys().filter(|p| !a.contains_key(*p)) {
        diff.push(format!("only on ZooKeeper: {path}"));
    }
    diff
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
