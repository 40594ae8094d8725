//! What a publication produced: permits, unknown outcomes, evidence, the final row, and the
//! normalized JSON (no session ids, xids or timings) that must be equal on every server.

use serde::Serialize;
use serde_json::{json, Value};

use crate::evidence::HostEvidence;
use crate::link::Sent;

/// How a publication ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Published everywhere and the exact predecessor cleaned up; the row is idle again.
    Completed,
    /// Terminal mixed or unknown evidence; the row says failed_closed, both generations kept.
    FailedClosed,
    /// Hosts are still working past the wait; the row stays admitted and the DDL runs on.
    StillRunning,
    /// A mutation's reply was lost: no permit, stopped.
    Unknown,
    /// The row was not in a phase this operation may start from, or a CAS was refused.
    Refused,
    /// Keeper could not be read.
    Error,
}

/// An in-memory permit: what an acknowledged CAS plus an exact read-back allows next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Permit {
    /// `dispatch` (send the DDL once) or `cleanup` (remove the exact predecessor once).
    pub kind: &'static str,
    pub target: String,
    pub epoch: u64,
    /// The row version the read-back showed (the CAS's expected version + 1).
    pub row_version: i32,
    /// The CAS request that earned it, as (session, xid).
    pub from: (i64, i32),
}

/// A mutation whose reply never came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unknown {
    pub what: String,
    pub path: String,
    pub from: (i64, i32),
    /// What a re-read then showed (`applied`, `not-applied`, `unreadable`); informative only:
    /// it never turns into a permit.
    pub reread: String,
}

/// Everything one publication did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub target: String,
    pub row_path: String,
    /// Phases written and confirmed by read-back, in order (`bootstrap` for the first row).
    pub phases: Vec<String>,
    pub permits: Vec<Permit>,
    pub unknowns: Vec<Unknown>,
    pub ddl_entry: Option<String>,
    pub ddl_text: Option<String>,
    pub evidence: Vec<HostEvidence>,
    pub outcome: Option<Outcome>,
    pub reason: String,
    /// The row's authority text after the run (as read back, if readable).
    pub final_row: Option<String>,
    pub final_row_version: Option<i32>,
    /// The predecessor generation table removed by cleanup.
    pub removed: Option<String>,
    /// Every request sent (session, xid, what, outcome).
    pub journal: Vec<Sent>,
}

impl Report {
    /// The normalized result: identical for the same config on any correct server.
    pub fn normalized(&self) -> Value {
        let row: Value = self.final_row.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or(Value::Null);
        json!({
            "target": self.target,
            "row_path": self.row_path,
            "outcome": self.outcome,
            "reason": self.reason,
            "phases": self.phases,
            "permits": self.permits.iter().map(|p| json!({"kind": p.kind, "epoch": p.epoch, "row_version": p.row_version})).collect::<Vec<_>>(),
            "unknown_outcomes": self.unknowns.iter().map(|u| json!({"what": u.what, "reread": u.reread})).collect::<Vec<_>>(),
            "final_authority_row": {"version": self.final_row_version, "authority": row},
            "ddl_entry": {"name": self.ddl_entry, "text": self.ddl_text},
            "evidence": self.evidence,
            "removed_predecessor": self.removed,
        })
    }
}
