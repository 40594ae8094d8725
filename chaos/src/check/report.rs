//! The checkers' results together: a [`Report`] of every [`CheckResult`] of a run, which
//! prints for people (`Display`: one line per checker, then each violation with its window
//! and the ops that show it) and serializes for machines (serde JSON), and which of the
//! checkers apply to a history ([`check_history`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::whitebox::WhiteBox;
use super::{counter, ids, linear, lock, queue, session, set, whitebox, CheckResult, Verdict, Violation};
use crate::history::{Call, History};

/// How to check a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOptions {
    /// The value every register starts with (at version 0).
    pub register_init: i64,
    /// States one linearizability search may explore before the verdict is unknown.
    pub budget: u64,
    /// Whether to check the session guarantees (off for a target that does not promise them
    /// across reconnections, if the run moves sessions).
    pub sessions: bool,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions { register_init: 0, budget: linear::DEFAULT_BUDGET, sessions: true }
    }
}

/// Every checker's result on one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    pub results: Vec<CheckResult>,
}

impl Report {
    /// Fail if any checker failed, else unknown if any could not decide, else pass.
    pub fn verdict(&self) -> Verdict {
        let any = |v| self.results.iter().any(|r| r.verdict == v);
        if any(Verdict::Fail) {
            Verdict::Fail
        } else if any(Verdict::Unknown) {
            Verdict::Unknown
        } else {
            Verdict::Pass
        }
    }

    /// Whether every checker passed (the run's exit status is 0 only then).
    pub fn passed(&self) -> bool {
        self.verdict() == Verdict::Pass
    }

    /// Every violation, with the checker that found it.
    pub fn violations(&self) -> impl Iterator<Item = (&str, &Violation)> + '_ {
        self.results.iter().flat_map(|r| r.violations.iter().map(move |v| (r.checker.as_str(), v)))
    }
}

/// Runs every checker that applies to `history`: the workloads' own (chosen by the ops the
/// history holds), the session guarantees (when `opts.sessions`), and the white-box checks
/// when the runner supplies what it saw inside the cluster.
pub fn check_history(history: &History, whitebox: Option<&WhiteBox>, opts: &CheckOptions) -> Report {
    let has = |f: fn(&Call) -> bool| history.ops.iter().any(|o| f(&o.call));
    let mut results = Vec::new();
    if has(|c| matches!(c, Call::Read | Call::Write { .. } | Call::Cas { .. })) {
        results.push(linear::check(history, opts.register_init, opts.budget));
    }
    if has(|c| matches!(c, Call::Add { .. } | Call::ReadSet)) {
        results.push(set::check(history));
    }
    if has(|c| matches!(c, Call::NewIds { .. })) {
        results.push(ids::check(history));
    }
    if has(|c| matches!(c, Call::CounterAdd { .. } | Call::CounterRead)) {
        results.push(counter::check(history));
    }
    if has(|c| matches!(c, Call::Enqueue { .. } | Call::Dequeue | Call::Drain)) {
        results.push(queue::check(history));
    }
    if has(|c| matches!(c, Call::Acquire | Call::Fenced { .. } | Call::Release { .. })) {
        results.push(lock::check(history));
    }
    if opts.sessions {
        results.push(session::check(history));
    }
    if let Some(wb) = whitebox {
        results.extend(whitebox::check(history, wb));
    }
    Report { results }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl fmt::Display for Violation {
    /// `k1: ... [12.3..14.0 ms]`, then one indented line per op.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        write!(f, "{} [{:.1}..{:.1} ms]", self.message, ms(self.start_ns), ms(self.end_ns))?;
        for line in &self.evidence {
            write!(f, "\n    {line}")?;
        }
        Ok(())
    }
}

impl fmt::Display for CheckResult {
    /// `   FAIL linearizable: summary`, then each violation, then how many were not listed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>7} {}: {}", self.verdict, self.checker, self.summary)?;
        for v in &self.violations {
            write!(f, "\n  - {v}")?;
        }
        if self.violation_count > self.violations.len() {
            write!(f, "\n  ... and {} more", self.violation_count - self.violations.len())?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.results {
            writeln!(f, "{r}")?;
        }
        let failed = self.results.iter().filter(|r| r.verdict == Verdict::Fail).count();
        write!(f, "{}: {} checkers, {failed} failed", self.verdict(), self.results.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Outcome, Ret};
    use crate::testutil::Hist;

    fn stale_read() -> History {
        let mut b = Hist::default();
        b.write(0, "k", 7, 1, 0, 1);
        b.read(1, "k", 0, 0, 2, 3);
        b.op(2, "", Call::NewIds { count: 1 }, Outcome::Ok, Ret::Ids { ids: vec![1] }, 0, 1);
        b.h
    }

    #[test]
    fn the_checkers_follow_the_history_and_one_failure_fails_the_report() {
        let h = stale_read();
        let r = check_history(&h, None, &CheckOptions::default());
        let names: Vec<&str> = r.results.iter().map(|c| c.checker.as_str()).collect();
        assert_eq!(names, ["linearizable", "unique-ids", "session"]);
        assert_eq!(r.verdict(), Verdict::Fail);
        assert!(!r.passed());
        let wb = WhiteBox::default();
        let r = check_history(&h, Some(&wb), &CheckOptions { sessions: false, ..CheckOptions::default() });
        let names: Vec<&str> = r.results.iter().map(|c| c.checker.as_str()).collect();
        assert_eq!(names, ["linearizable", "unique-ids", "committed-once", "replica-digests", "one-leader-per-term"]);
    }

    #[test]
    fn the_report_reads_as_text_and_round_trips_as_json() {
        let r = check_history(&stale_read(), None, &CheckOptions::default());
        let text = r.to_string();
        assert!(text.contains("   FAIL linearizable: 2 register ops on 1 keys"), "{text}");
        assert!(text.contains("\n  - k: no order of these 2 ops"), "{text}");
        assert!(text.contains("\n    #0 p0 write(7) on k -> ok version=1 [0.0..1.0 ms]"), "{text}");
        assert!(text.contains("   pass unique-ids"), "{text}");
        assert!(text.ends_with("FAIL: 3 checkers, 1 failed"), "{text}");
        let json = serde_json::to_string(&r).expect("serializes");
        assert!(json.contains(r#""verdict":"fail""#), "{json}");
        let back: Report = serde_json::from_str(&json).expect("parses");
        assert_eq!(back.to_string(), text);
        assert_eq!(Report::default().verdict(), Verdict::Pass);
    }
}
