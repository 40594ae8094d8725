//! Runs kazoo's shipped test suite against a server and compares outcomes.
//!
//! kazoo (the Python ZooKeeper client) ships ~500 tests exercising the whole
//! client protocol surface: watches, sessions, multi, ACLs, recipes. The
//! Python side, `tests/kazoo/run_kazoo_suite.py`, points kazoo's harness at an
//! external server and writes `{test_id: outcome}` JSON; this module runs it
//! with a hard deadline and compares a candidate run against a baseline (real
//! ZooKeeper), since "passes on ZooKeeper but not on testkeeper" is the
//! compatibility bug we are looking for.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::{repo_root, venv_python};
use crate::process::tail_lines;

/// Per-test limit handed to pytest-timeout. The slowest test against real
/// ZooKeeper takes ~10 s (deliberate sleeps); 30 s leaves ample headroom.
pub const PER_TEST_TIMEOUT_SECS: u32 = 30;

/// Default cap on one whole suite run (real ZooKeeper: ~150 s with the gevent and eventlet
/// handler tests). A server that
/// makes every test hang until its per-test timeout would otherwise take
/// hours; past this the run is killed and unfinished tests count as not run.
/// Override with `TESTKEEPER_KAZOO_SUITE_TIMEOUT` (seconds).
pub const DEFAULT_SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// Outcome recorded for a test the killed run never reached.
pub const NOT_RUN: &str = "not run";

/// The Python runner script.
pub fn runner_script() -> PathBuf {
    repo_root().join("tests").join("kazoo").join("run_kazoo_suite.py")
}

/// One completed (or killed) suite run.
#[derive(Debug, Clone)]
pub struct SuiteRun {
    pub label: String,
    pub hosts: String,
    /// Test id (`test_client.py::TestClient::test_create`) to outcome.
    pub outcomes: BTreeMap<String, String>,
    pub wall: Duration,
    /// True when the overall deadline killed the run.
    pub killed: bool,
    pub json: PathBuf,
    pub log: PathBuf,
}

impl SuiteRun {
    /// Number of tests with this outcome (`passed`, `failed`, ...).
    pub fn count(&self, outcome: &str) -> usize {
        self.outcomes.values().filter(|o| *o == outcome).count()
    }

    /// e.g. `zookeeper: 304 passed, 0 failed, 168 skipped, 21 excluded (+ others) in 72.1s`.
    pub fn summary(&self) -> String {
        let mut by_outcome: BTreeMap<&str, usize> = BTreeMap::new();
        for o in self.outcomes.values() {
            *by_outcome.entry(o.as_str()).or_default() += 1;
        }
        let mut s = format!("{} against {}: ", self.label, self.hosts);
        for (i, key) in ["passed", "failed", "error", "timeout", "skipped", "excluded"].iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(s, "{sep}{} {key}", by_outcome.remove(key).unwrap_or(0));
        }
        for (key, n) in by_outcome {
            let _ = write!(s, ", {n} {key}");
        }
        let _ = write!(s, " in {:.1}s", self.wall.as_secs_f64());
        if self.killed {
            s.push_str(" (KILLED at the suite deadline)");
        }
        s
    }

    /// Ids of tests with `outcome`, sorted.
    pub fn with_outcome(&self, outcome: &str) -> Vec<&str> {
        self.outcomes.iter().filter(|(_, o)| *o == outcome).map(|(id, _)| id.as_str()).collect()
    }
}

/// Tests that passed in `baseline` but did not pass in `candidate`, with the
/// candidate's outcome ([`NOT_RUN`] if it never got there).
pub fn regressions(baseline: &SuiteRun, candidate: &SuiteRun) -> Vec<(String, String)> {
    baseline
        .with_outcome("passed")
        .into_iter()
        .filter_map(|id| {
            let got = candidate.outcomes.get(id).map_or(NOT_RUN, String::as_str);
            (got != "passed").then(|| (id.to_string(), got.to_string()))
        })
        .collect()
}

/// pytest's failure section for `test_id` from the run's log (the block
/// under `____ Class.test ____`), at most `max_lines` lines, if present.
pub fn failure_excerpt(run: &SuiteRun, test_id: &str, max_lines: usize) -> Option<String> {
    let mut parts = test_id.rsplit("::");
    let (test, class) = (parts.next()?, parts.next()?);
    let header = format!(" {class}.{test} ");
    let text = std::fs::read_to_string(&run.log).ok()?;
    let mut lines = text.lines().skip_while(|l| !(l.starts_with('_') && l.contains(&header)));
    lines.next()?; // the header itself
    let body: Vec<&str> =
        lines.take_while(|l| !l.starts_with("____") && !l.starts_with("====")).take(max_lines).collect();
    Some(body.join("\n"))
}

/// Runs the kazoo suite against `hosts`, writing `<label>.json` and
/// `<label>.log` into `out_dir`. `filter` is a pytest `-k` expression (also
/// taken from `TESTKEEPER_KAZOO_FILTER` when `None`), handy when debugging.
///
/// Errors only when the suite could not run at all; test failures are data.
pub fn run_suite(label: &str, hosts: &str, out_dir: &Path, filter: Option<&str>) -> Result<SuiteRun, String> {
    std::fs::create_dir_all(out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let json = out_dir.join(format!("{label}.json"));
    let log = out_dir.join(format!("{label}.log"));
    let _ = std::fs::remove_file(&json); // never read a stale result
    let out = File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| format!("dup log fd: {e}"))?;

    let env_filter = std::env::var("TESTKEEPER_KAZOO_FILTER").ok();
    let filter = filter.or(env_filter.as_deref()).filter(|f| !f.is_empty());
    let mut cmd = Command::new(venv_python());
    cmd.arg(runner_script())
        .args(["--hosts", hosts])
        .arg("--json")
        .arg(&json)
        .args(["--timeout", &PER_TEST_TIMEOUT_SECS.to_string()]);
    if let Some(k) = filter {
        cmd.args(["-k", k]);
    }
    // Unbuffered, so a killed run's log shows how far it got.
    cmd.env("PYTHONUNBUFFERED", "1");
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);

    let limit = suite_timeout();
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("spawning {}: {e}", venv_python().display()))?;
    let (status, killed) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (Some(status), false),
            Ok(None) if started.elapsed() >= limit => {
                // The runner starts no processes of its own (the excluded
                // SASL tests are the only ones that would), so killing its
                // PID is enough.
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("waiting for kazoo suite: {e}")),
        }
    };
    let wall = started.elapsed();

    let failure = |why: String| {
        format!(
            "kazoo suite ({label}) against {hosts} {why}; last lines of {}:\n{}",
            log.display(),
            tail_lines(&log, 30)
        )
    };
    if let Some(status) = status {
        // 0: ran (whatever the outcomes); 2: usage/infrastructure error.
        if !status.success() {
            return Err(failure(format!("exited with {status}")));
        }
    }
    let text = std::fs::read_to_string(&json).map_err(|e| failure(format!("left no {} ({e})", json.display())))?;
    let outcomes: BTreeMap<String, String> =
        serde_json::from_str(&text).map_err(|e| failure(format!("wrote unparsable JSON ({e})")))?;
    if outcomes.is_empty() {
        return Err(failure("recorded no tests".to_string()));
    }
    Ok(SuiteRun { label: label.to_string(), hosts: hosts.to_string(), outcomes, wall, killed, json, log })
}

fn suite_timeout() -> Duration {
    std::env::var("TESTKEEPER_KAZOO_SUITE_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(DEFAULT_SUITE_TIMEOUT, Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, pairs: &[(&str, &str)]) -> SuiteRun {
        SuiteRun {
            label: label.into(),
            hosts: "127.0.0.1:1".into(),
            outcomes: pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            wall: Duration::from_millis(1500),
            killed: false,
            json: PathBuf::new(),
            log: PathBuf::new(),
        }
    }

    #[test]
    fn regressions_are_baseline_passes_that_do_not_pass() {
        let zk = run("zk", &[("a", "passed"), ("b", "passed"), ("c", "failed"), ("d", "passed"), ("e", "skipped")]);
        let tk = run("tk", &[("a", "passed"), ("b", "timeout"), ("c", "passed"), ("e", "passed")]);
        assert_eq!(
            regressions(&zk, &tk),
            vec![("b".to_string(), "timeout".to_string()), ("d".to_string(), NOT_RUN.to_string())]
        );
    }

    #[test]
    fn summary_lists_counts() {
        let r = run("zk", &[("a", "passed"), ("b", "passed"), ("c", "skipped"), ("d", "xfailed")]);
        assert_eq!(
            r.summary(),
            "zk against 127.0.0.1:1: 2 passed, 0 failed, 0 error, 0 timeout, 1 skipped, 0 excluded, 1 xfailed in 1.5s"
        );
    }

    #[test]
    fn failure_excerpt_finds_the_section() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = run("tk", &[]);
        r.log = dir.path().join("tk.log");
        std::fs::write(
            &r.log,
            "== FAILURES ==\n____ TestClient.test_a ____\nline a1\nE   boom\n\
             ____ TestClient.test_b ____\nline b1\n==== warnings ====\n",
        )
        .unwrap();
        let a = failure_excerpt(&r, "test_client.py::TestClient::test_a", 10).unwrap();
        assert_eq!(a, "line a1\nE   boom");
        let b = failure_excerpt(&r, "test_client.py::TestClient::test_b", 10).unwrap();
        assert_eq!(b, "line b1");
        assert!(failure_excerpt(&r, "test_client.py::TestClient::test_c", 10).is_none());
    }

    #[test]
    fn runner_script_is_in_the_repo() {
        assert!(runner_script().is_file(), "{}", runner_script().display());
    }
}
