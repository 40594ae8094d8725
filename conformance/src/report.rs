//! The run's report and its renderings: a terminal line per scenario, a summary table, JSON,
//! JUnit XML (one testcase per scenario) and a publishable Markdown compatibility report.

use std::fmt::Write as _;

use serde::Serialize;

use crate::diff::LineDiff;
use crate::scenario::Scenario;

/// Outcome of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Same transcript as the reference.
    Pass,
    /// Differs only where the known-differences table says the flavors differ.
    ExpectedDifference,
    /// Any other difference, or a setup/cleanup problem.
    Fail,
    /// Not run: it writes and the run is `--read-only`.
    Skipped,
    /// Run with nothing to compare against (no `--reference` or `--expect`).
    Ran,
}

impl Status {
    pub(crate) fn of(r: &ScenarioResult) -> Status {
        if !r.problems.is_empty() || r.diffs.iter().any(|d| !d.is_expected()) {
            Status::Fail
        } else if !r.diffs.is_empty() {
            Status::ExpectedDifference
        } else {
            Status::Pass
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::ExpectedDifference => "expected difference",
            Status::Fail => "FAIL",
            Status::Skipped => "skipped",
            Status::Ran => "ran",
        }
    }
}

/// Who was tested.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// `host:port`, or the golden file's path.
    pub address: String,
    pub flavor: String,
    /// The version line of `srvr` (or `envi`).
    pub version: String,
}

/// One scenario's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub about: String,
    pub source: String,
    pub status: Status,
    pub steps: usize,
    pub duration_ms: u64,
    pub diffs: Vec<LineDiff>,
    /// The ops up to the first unexpected difference.
    pub reproduction: Vec<String>,
    pub problems: Vec<String>,
}

impl ScenarioResult {
    pub(crate) fn new(sc: &Scenario) -> ScenarioResult {
        ScenarioResult {
            name: sc.name.into(),
            about: sc.about.into(),
            source: sc.source.into(),
            status: Status::Ran,
            steps: 0,
            duration_ms: 0,
            diffs: Vec::new(),
            reproduction: Vec::new(),
            problems: Vec::new(),
        }
    }
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub target: ServerInfo,
    pub reference: Option<ServerInfo>,
    pub root: String,
    pub read_only: bool,
    pub duration_ms: u64,
    pub scenarios: Vec<ScenarioResult>,
}

impl Report {
    pub fn count(&self, s: Status) -> usize {
        self.scenarios.iter().filter(|r| r.status == s).count()
    }

    /// Exit 0 only when nothing differs unexpectedly.
    pub fn ok(&self) -> bool {
        self.count(Status::Fail) == 0
    }

    /// `pass 20, expected difference 3, FAIL 0, skipped 0`.
    pub fn totals(&self) -> String {
        [Status::Pass, Status::ExpectedDifference, Status::Fail, Status::Skipped, Status::Ran]
            .iter()
            .filter(|s| **s != Status::Ran || self.count(Status::Ran) > 0)
            .map(|s| format!("{} {}", s.label(), self.count(*s)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The summary table printed at the end of a terminal run.
    pub fn summary_table(&self) -> String {
        let mut out = format!("{:<32} {:<20} {:>5} {:>8}\n", "scenario", "status", "steps", "ms");
        for r in &self.scenarios {
            let _ = writeln!(out, "{:<32} {:<20} {:>5} {:>8}", r.name, r.status.label(), r.steps, r.duration_ms);
        }
        let _ = writeln!(out, "{} in {} ms", self.totals(), self.duration_ms);
        out
    }

    /// JUnit XML: one testsuite, one testcase per scenario; failures carry the differing
    /// lines and the reproduction.
    pub fn junit(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuite name=\"testkeeper-conformance\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            self.scenarios.len(),
            self.count(Status::Fail),
            self.count(Status::Skipped),
            self.duration_ms as f64 / 1000.0
        );
        for r in &self.scenarios {
            let _ = write!(
                out,
                "  <testcase classname=\"conformance\" name=\"{}\" time=\"{:.3}\"",
                xml(&r.name),
                r.duration_ms as f64 / 1000.0
            );
            match r.status {
                Status::Fail => {
                    let _ = writeln!(
                        out,
                        ">\n    <failure message=\"unexpected difference\">{}</failure>\n  </testcase>",
                        xml(&failure_text(r))
                    );
                }
                Status::Skipped => {
                    out.push_str(">\n    <skipped message=\"writes; run is read-only\"/>\n  </testcase>\n")
                }
                Status::ExpectedDifference => {
                    let _ = writeln!(out, ">\n    <system-out>{}</system-out>\n  </testcase>", xml(&failure_text(r)));
                }
                _ => out.push_str("/>\n"),
            }
        }
        out.push_str("</testsuite>\n");
        out
    }

    /// A compatibility report a vendor can publish.
    pub fn markdown(&self) -> String {
        let mut out = String::from("# ZooKeeper-protocol conformance report\n\n");
        let _ = writeln!(
            out,
            "- Target: `{}`, flavor `{}`, version: {}",
            self.target.address, self.target.flavor, self.target.version
        );
        match &self.reference {
            Some(r) => {
                let _ = writeln!(out, "- Reference: `{}`, flavor `{}`, version: {}", r.address, r.flavor, r.version);
            }
            None => out.push_str("- Reference: none (transcripts only)\n"),
        }
        let _ =
            writeln!(out, "- Mode: {}", if self.read_only { "read-only" } else { "scenarios under a private root" });
        let _ = writeln!(out, "- Result: {} ({} ms)\n", self.totals(), self.duration_ms);
        out.push_str("| scenario | status | what it checks |\n|---|---|---|\n");
        for r in &self.scenarios {
            let _ = writeln!(out, "| `{}` | {} | {} |", r.name, r.status.label(), r.about.replace('|', "\\|"));
        }
        for r in self.scenarios.iter().filter(|r| !r.diffs.is_empty() || !r.problems.is_empty()) {
            let _ = writeln!(
                out,
                "\n## `{}`: {}\n\nSource: {}\n\n```text\n{}```",
                r.name,
                r.status.label(),
                r.source,
                failure_text(r)
            );
        }
        out
    }
}

/// The differing lines (and the reproduction, for failures) as plain text.
pub fn failure_text(r: &ScenarioResult) -> String {
    let mut out = String::new();
    for p in &r.problems {
        let _ = writeln!(out, "problem: {p}");
    }
    for d in &r.diffs {
        let tag =
            if d.is_expected() { format!("expected ({})", d.expected_by.join(", ")) } else { "UNEXPECTED".into() };
        let _ = writeln!(out, "step {} {} {}: {tag}", d.step, d.session, d.op);
        for k in &d.keys {
            let _ = writeln!(out, "    {}: target {} / reference {}", k.key, k.target, k.reference);
        }
    }
    if !r.reproduction.is_empty() {
        out.push_str("reproduction:\n");
        for l in &r.reproduction {
            let _ = writeln!(out, "    {l}");
        }
    }
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
