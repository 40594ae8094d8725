//! A publication's report in words, for people: the outcome and why, the phases the row
//! went through, each permit and what earned it, the DDL entry, every host's evidence, and the
//! row left behind. (`Report::normalized` is the machine form; this is what the CLI prints.)

use std::fmt::Write as _;

use crate::authority::Authority;
use crate::report::{Outcome, Report};

impl Outcome {
    /// The outcome in words.
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::Completed => "completed: published on every host, the predecessor removed, the row idle again",
            Outcome::FailedClosed => "failed closed: terminal mixed or unknown evidence; both generations kept",
            Outcome::StillRunning => "still running: hosts were working when the wait ended; the DDL runs on",
            Outcome::Unknown => "unknown: a mutation's reply was lost, so no permit and the run stopped",
            Outcome::Refused => "refused: the row was not in a phase this operation may start from, or a CAS lost",
            Outcome::Error => "error: Keeper could not be read",
        }
    }
}

impl Report {
    /// The report as indented lines under a heading naming the server.
    pub fn summary(&self, server: &str) -> String {
        let mut out = String::new();
        let outcome = self.outcome.map_or("not finished", Outcome::describe);
        let _ = writeln!(out, "{server}: {outcome}");
        if !self.reason.is_empty() {
            let _ = writeln!(out, "  reason:    {}", self.reason);
        }
        let phases = if self.phases.is_empty() { "none".to_string() } else { self.phases.join(" -> ") };
        let _ = writeln!(out, "  phases:    {phases}");
        if self.permits.is_empty() {
            out.push_str("  permits:   none\n");
        }
        for p in &self.permits {
            let _ = writeln!(
                out,
                "  permit:    {} for {} at epoch {}, after the CAS read back at row version {}",
                p.kind, p.target, p.epoch, p.row_version
            );
        }
        for u in &self.unknowns {
            let _ = writeln!(out, "  unknown:   {} on {} (a re-read showed: {})", u.what, u.path, u.reread);
        }
        let ddl = self.ddl_entry.as_deref().unwrap_or("none");
        let _ = writeln!(out, "  ddl entry: {ddl}");
        if self.evidence.is_empty() {
            out.push_str("  evidence:  none\n");
        }
        for h in &self.evidence {
            let status = match (h.state, h.code, h.malformed) {
                (_, _, true) => "a malformed status".to_string(),
                ("finished", Some(code), _) => format!("finished with status {code}"),
                (state, _, _) => state.to_string(),
            };
            let generation =
                if h.generation_exact { "holds the exact generation" } else { "does not hold the exact generation" };
            let _ = writeln!(out, "  host {}:   {status}, {generation}", h.host);
        }
        let row = self.final_row.as_deref().and_then(Authority::from_text);
        match (row, self.final_row_version) {
            (Some(a), Some(v)) => {
                let _ = writeln!(out, "  final row: phase {} epoch {} at version {v}", a.phase.name(), a.epoch);
            }
            _ => out.push_str("  final row: unreadable\n"),
        }
        if let Some(r) = &self.removed {
            let _ = writeln!(out, "  removed:   predecessor {r}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::evidence::HostEvidence;
    use crate::report::{Outcome, Permit, Report};

    #[test]
    fn says_what_happened_in_words() {
        let r = Report {
            phases: vec!["bootstrap".into(), "admitted".into()],
            permits: vec![Permit { kind: "dispatch", target: "db.t".into(), epoch: 1, row_version: 2, from: (1, 7) }],
            evidence: vec![HostEvidence {
                host: "h1".into(),
                state: "finished",
                code: Some(0),
                malformed: false,
                generation_exact: true,
            }],
            outcome: Some(Outcome::Completed),
            ..Default::default()
        };
        let s = r.summary("target 127.0.0.1:2181");
        assert!(s.starts_with("target 127.0.0.1:2181: completed: published on every host"), "{s}");
        assert!(s.contains("phases:    bootstrap -> admitted"), "{s}");
        assert!(s.contains("permit:    dispatch for db.t at epoch 1, after the CAS read back at row version 2"), "{s}");
        assert!(s.contains("host h1:   finished with status 0, holds the exact generation"), "{s}");
        assert!(!s.contains("Some("), "{s}");
    }
}
