//! The logging proxy `zk_wire_log.py` in front of a server ClickHouse talks to: each
//! request's opcode and its reply's error code, and the fingerprints compared across servers.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use testkeeper_tests::env::venv_python;
use testkeeper_tests::process::ServerChild;

use super::script;

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
