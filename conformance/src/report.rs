//! The run's report and its renderings: a header, a terminal line per scenario and a totals line, JSON,
//! JUnit XML (one testcase per scenario) and a publishable Markdown compatibility report.

use std::fmt::Write as _;

use serde::Serialize;

use crate::diff::{KeyDiff, LineDiff};
use crate::expected;
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
    /// Not run: see the result's `skipped_because` (it writes and the run is read-only, it
    /// needs Keeper on both sides, or more servers than the target has).
    Skipped,
    /// Run with nothing to compare against (no `--reference` or `--expect`).
    Ran,
}

impl Status {
    /// The status of a scenario that ran; `compared` says whether there was a reference.
    pub(crate) fn of(r: &ScenarioResult, compared: bool) -> Status {
        if !r.problems.is_empty() || r.diffs.iter().any(|d| !d.is_expected()) {
            Status::Fail
        } else if !compared {
            Status::Ran
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
    /// Why a skipped scenario did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_because: Option<String>,
}

impl ScenarioResult {
    pub(crate) fn new(sc: &Scenario) -> ScenarioResult {
        ScenarioResult {
            name: sc.name.clone(),
            about: sc.about.clone(),
            source: sc.source.clone(),
            status: Status::Ran,
            steps: 0,
            duration_ms: 0,
            diffs: Vec::new(),
            reproduction: Vec::new(),
            problems: Vec::new(),
            skipped_because: None,
        }
    }

    /// The terminal line of this result, plus the indented detail of a failure or of an
    /// expected difference (each with its reason).
    pub fn terminal(&self) -> String {
        let mut out = match &self.skipped_because {
            Some(why) => format!("{:<20} {}: {why}\n", self.status.label(), self.name),
            None => {
                format!("{:<20} {} ({} steps, {} ms)\n", self.status.label(), self.name, self.steps, self.duration_ms)
            }
        };
        if matches!(self.status, Status::Fail | Status::ExpectedDifference) {
            for l in failure_text(self).lines() {
                let _ = writeln!(out, "    {l}");
            }
        }
        out
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

    /// Who is compared with whom, printed before the first result.
    pub fn header(target: &ServerInfo, reference: Option<&ServerInfo>, root: &str, read_only: bool) -> String {
        let mut out = format!("target:    {} (flavor {}; {})\n", target.address, target.flavor, target.version);
        match reference {
            Some(r) => {
                let _ = writeln!(out, "reference: {} (flavor {}; {})", r.address, r.flavor, r.version);
            }
            None => out.push_str("reference: none (results are `ran`: nothing to compare with)\n"),
        }
        let mode = if read_only { "read-only".to_string() } else { format!("scenarios under {root}") };
        let _ = writeln!(out, "mode:      {mode}");
        out
    }

    /// The closing line of a terminal run.
    pub fn footer(&self) -> String {
        format!("{} in {} ms\n", self.totals(), self.duration_ms)
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
                    let why = r.skipped_because.as_deref().unwrap_or("skipped");
                    let _ = writeln!(out, ">\n    <skipped message=\"{}\"/>\n  </testcase>", xml(why));
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
            let status = match &r.skipped_because {
                Some(why) => format!("skipped ({why})"),
                None => r.status.label().to_string(),
            };
            let _ = writeln!(out, "| `{}` | {status} | {} |", r.name, r.about.replace('|', "\\|"));
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
        let tag = if d.is_expected() { "expected" } else { "UNEXPECTED" };
        let _ = writeln!(out, "step {} {} {}: {tag}", d.step, d.session, d.op);
        for k in &d.keys {
            let _ = writeln!(
                out,
                "    {}: target {} / reference {}",
                k.key,
                KeyDiff::show(&k.target),
                KeyDiff::show(&k.reference)
            );
        }
        for id in &d.expected_by {
            let why = expected::by_id(id).map_or("", |e| e.what);
            let _ = writeln!(out, "    expected difference {id}: {why}");
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
