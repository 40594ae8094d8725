//! The checkers. Each reads the history (and, white-box, what the embedded cluster recorded)
//! and says whether its guarantee held; a violation names the smallest window of the history
//! that shows it, and the ops in it.
//!
//! # Layout
//! - this file: [`Verdict`], [`Violation`], [`CheckResult`].
//! - `report`: [`Report`] (Display and JSON) and [`check_history`], which runs the checkers
//!   that apply to a history.
//! - `linear/`: linearizability per key (Wing & Gong with Lowe's memoization, P-compositional),
//!   with unknown outcomes as ops that may or may not have happened.
//! - `set`, `queue`, `ids`, `counter`, `lock`: the workloads' own guarantees.
//! - `session`: ZooKeeper's session guarantees (zxids never go backwards, own writes seen).
//! - `whitebox`: the embedded cluster's logs, digests and leaders.

pub mod counter;
pub mod ids;
pub mod linear;
pub mod lock;
pub mod queue;
pub mod report;
pub mod session;
pub mod set;
pub mod whitebox;

use serde::{Deserialize, Serialize};

pub use report::{check_history, CheckOptions, Report};

use crate::history::{History, Op, OpId};

/// Whether a checker's guarantee held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
    /// The checker could not decide (a search over its budget, a final read that never
    /// succeeded): not a pass.
    Unknown,
}

impl Verdict {
    /// `pass`, `FAIL`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One anomaly: what is wrong, and the smallest window of the history that shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub message: String,
    /// The window, ns since the run started.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The ops that show it (the window's evidence), in invocation order.
    pub ops: Vec<OpId>,
    /// The key or object it is about, if any.
    pub key: Option<String>,
    /// One line per op of `ops` ([`crate::history::Op::describe`]), so the violation reads
    /// on its own (terminal, JSON, JUnit).
    pub evidence: Vec<String>,
}

impl Violation {
    /// A violation whose window spans `ops` (invocation of the first to completion of the last).
    pub fn over(history: &History, message: String, mut ops: Vec<OpId>, key: Option<String>) -> Violation {
        ops.sort_by_key(|id| (history.ops[*id].invoke_ns, *id));
        ops.dedup();
        let start_ns = history.ops_of(&ops).map(|o| o.invoke_ns).min().unwrap_or(0);
        let end_ns = history.ops_of(&ops).map(|o| o.complete_ns).max().unwrap_or(start_ns);
        let evidence = history.ops_of(&ops).map(|o| o.describe()).collect();
        Violation { message, start_ns, end_ns, ops, key, evidence }
    }

    /// A violation that no op of the history shows (the white-box checks), at `at_ns`.
    pub fn bare(message: String, at_ns: u64, key: Option<String>) -> Violation {
        Violation { message, start_ns: at_ns, end_ns: at_ns, ops: Vec::new(), key, evidence: Vec::new() }
    }
}

/// One checker's result on one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    /// The checker's name, e.g. `linearizable`.
    pub checker: String,
    pub verdict: Verdict,
    /// One line: what was checked and what came out.
    pub summary: String,
    /// At most [`MAX_LISTED`] violations (the count of all is in `violation_count`).
    pub violations: Vec<Violation>,
    pub violation_count: usize,
}

/// Violations kept per checker; the rest are counted.
pub const MAX_LISTED: usize = 20;

impl CheckResult {
    /// A result from violations found: `Fail` when there is any, else `Pass`.
    pub fn from_violations(checker: &str, summary: String, mut violations: Vec<Violation>) -> CheckResult {
        let violation_count = violations.len();
        // Checkers gather some violations from hash maps: sort fully, so a replay reads the same.
        violations.sort_by(|a, b| {
            (a.end_ns, a.start_ns, &a.ops, &a.message).cmp(&(b.end_ns, b.start_ns, &b.ops, &b.message))
        });
        violations.truncate(MAX_LISTED);
        let verdict = if violation_count == 0 { Verdict::Pass } else { Verdict::Fail };
        CheckResult { checker: checker.to_string(), verdict, summary, violations, violation_count }
    }

    /// A checker that could not decide.
    pub fn unknown(checker: &str, summary: String) -> CheckResult {
        CheckResult {
            checker: checker.to_string(),
            verdict: Verdict::Unknown,
            summary,
            violations: Vec::new(),
            violation_count: 0,
        }
    }
}

/// For each of `items` (an op, and the value that ranks it), in invocation order: the largest
/// value among the items that completed before that op was invoked, and whose it was. The
/// sweep behind "a later op never sees less than an earlier one" (ids, counter reads).
pub(crate) fn largest_before<'a>(items: &[(&'a Op, i64)]) -> Vec<(&'a Op, Option<(i64, OpId)>)> {
    let mut by_end: Vec<(u64, i64, OpId)> = items.iter().map(|(o, v)| (o.complete_ns, *v, o.id)).collect();
    by_end.sort_unstable();
    let mut by_start: Vec<&'a Op> = items.iter().map(|(o, _)| *o).collect();
    by_start.sort_by_key(|o| (o.invoke_ns, o.id));
    let (mut k, mut best): (usize, Option<(i64, OpId)>) = (0, None);
    let mut out = Vec::with_capacity(by_start.len());
    for o in by_start {
        while k < by_end.len() && by_end[k].0 < o.invoke_ns {
            if best.is_none_or(|(m, _)| by_end[k].1 > m) {
                best = Some((by_end[k].1, by_end[k].2));
            }
            k += 1;
        }
        out.push((o, best));
    }
    out
}
