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
            "history: {} ops ({ok} ok, {fail} fail, {unknown} unknown), {} of {} planned nemesis windows ran, {:.1} s",
            self.history.ops.len(),
            self.history.nemesis.len(),
            self.schedule.len(),
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

    /// The run as a JUnit XML test suite (`--junit FILE`): one test case per checker, a
    /// failure for a violation (its windows as the text), a skip for a checker that could not
    /// decide, so CI systems show each checker on its own.
    pub fn junit(&self) -> String {
        let failures = self.results.iter().filter(|r| r.verdict == Verdict::Fail).count();
        let skipped = self.results.iter().filter(|r| r.verdict == Verdict::Unknown).count();
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            s,
            "<testsuite name=\"testkeeper chaos {} seed {}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{:.3}\">",
            xml(&self.workload),
            self.seed,
            self.results.len(),
            self.elapsed_ms as f64 / 1e3
        );
        let _ = writeln!(s, "  <properties><property name=\"replay\" value=\"{}\"/></properties>", xml(&self.replay));
        for r in &self.results {
            let _ = write!(s, "  <testcase classname=\"chaos.{}\" name=\"{}\"", xml(&self.workload), xml(&r.checker));
            match r.verdict {
                Verdict::Pass => s.push_str("/>\n"),
                Verdict::Unknown => {
                    let _ = writeln!(s, "><skipped message=\"{}\"/></testcase>", xml(&r.summary));
                }
                Verdict::Fail => {
                    let windows: String = r.violations.iter().map(|v| self.window(v)).collect();
                    let _ =
                        writeln!(s, "><failure message=\"{}\">{}</failure></testcase>", xml(&r.summary), xml(&windows));
                }
            }
        }
        s.push_str("</testsuite>\n");
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

/// `text` with XML's five special characters escaped.
pub(crate) fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(results: Vec<CheckResult>) -> Report {
        Report {
            seed: 7,
            workload: "register".into(),
            nemeses: vec![],
            target: "t".into(),
            schedule: vec![],
            replay: "testkeeper chaos --seed 7".into(),
            elapsed_ms: 1500,
            results,
            history: History::default(),
        }
    }

    #[test]
    fn junit_has_a_case_per_checker_and_escapes_what_it_quotes() {
        let bad = Violation {
            message: "read <stale> & \"old\"".into(),
            start_ns: 0,
            end_ns: 1,
            ops: vec![],
            key: None,
            evidence: vec![],
        };
        let r = report(vec![
            CheckResult::from_violations("linearizable", "1 key".into(), vec![bad]),
            CheckResult::from_violations("session", "ok".into(), vec![]),
            CheckResult::unknown("set", "no final read".into()),
        ]);
        let x = r.junit();
        assert!(x.contains("tests=\"3\" failures=\"1\" skipped=\"1\""), "{x}");
        assert!(x.contains("<testcase classname=\"chaos.register\" name=\"session\"/>"), "{x}");
        assert!(x.contains("read &lt;stale&gt; &amp; &quot;old&quot;") && !x.contains("<stale>"), "{x}");
        assert!(x.contains("<skipped message=\"no final read\"/>"), "{x}");
        assert!(!r.passed() && r.violated());
    }
}
