//! What a run reports: the seed and schedule, a summary of the history, one line per checker
//! with the smallest window of each violation, and the command that replays the run; or all
//! of it, history included, as JSON (`--json FILE`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::check::{CheckResult, Verdict, Violation};
use crate::history::History;

/// A finished run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub seed: u64,
    pub workload: String,
    pub nemeses: Vec<String>,
    pub target: String,
    /// The planned windows, one line each (as printed before the run).
    pub schedule: Vec<String>,
    /// The command line that replays this run.
    pub replay: String,
    pub elapsed_ms: u64,
    pub results: Vec<CheckResult>,
    pub history: History,
}

impl Report {
    /// Whether every checker passed (an undecided checker is not a pass).
    pub fn passed(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(|r| r.verdict == Verdict::Pass)
    }

    /// Whether some checker found a violation.
    pub fn violated(&self) -> bool {
        self.results.iter().any(|r| r.verdict == Verdict::Fail)
    }

    /// The terminal summary (the schedule was printed before the run).
    pub fn text(&self) -> String {
        let mut s = String::new();
        let (ok, fail, unknown) = self.history.counts();
        let _ = writeln!(
            s,
            "history: {} ops ({ok} ok, {fail} fail, {unknown} unknown), {} nemesis windows, {:.1} s",
            self.history.ops.len(),
            self.history.nemesis.len(),
            self.elapsed_ms as f64 / 1e3
        );
        for e in &self.history.nemesis {
            let end = e.end_ns.map_or("end".to_string(), |t| format!("{:.2}s", t as f64 / 1e9));
            let _ = writeln!(s, "  nemesis {:.2}s..{end} {}: {}", e.start_ns as f64 / 1e9, e.kind, e.detail);
        }
        for r in &self.results {
            let _ = writeln!(s, "{:<22} {:<7} {}", r.checker, r.verdict.name(), r.summary);
            for v in &r.violations {
                s.push_str(&self.window(v));
            }
            if r.violation_count > r.violations.len() {
                let _ = writeln!(s, "  ... and {} more violations", r.violation_count - r.violations.len());
            }
        }
        let verdict = if self.passed() {
            "PASS"
        } else if self.violated() {
            "VIOLATION"
        } else {
            "UNDECIDED"
        };
        let _ = writeln!(s, "{verdict} (seed {}); replay: {}", self.seed, self.replay);
        s
    }

    /// One violation: the message, its window, the ops that show it and the nemesis windows
    /// that overlap it.
    fn window(&self, v: &Violation) -> String {
        let mut s = String::new();
        let key = v.key.as_ref().map(|k| format!(" [{k}]")).unwrap_or_default();
        let _ = writeln!(s, "  violation{key}: {}", v.message);
        let _ = writeln!(
            s,
            "    window {:.1}..{:.1} ms, {} ops:",
            v.start_ns as f64 / 1e6,
            v.end_ns as f64 / 1e6,
            v.ops.len()
        );
        for op in self.history.ops_of(&v.ops) {
            let _ = writeln!(s, "      {}", op.describe());
        }
        for e in &self.history.nemesis {
            if e.start_ns <= v.end_ns && e.end_ns.is_none_or(|end| end >= v.start_ns) {
                let _ = writeln!(s, "    during nemesis {}: {}", e.kind, e.detail);
            }
        }
        s
    }
}
