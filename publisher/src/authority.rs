//! The authority row's content (the `authority` column, JSON) and its state machine.
//!
//! One row per qualified target. Every change of the row is one compare-and-swap from a phase
//! to a phase that [`Phase::may_become`] allows; anything else is a bug in the caller and is
//! refused before it reaches Keeper.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where a publication of one target stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `generation` is live everywhere; nothing in flight.
    Idle,
    /// An operation holds the target for `epoch`: the DDL with `ddl_token` may be sent once.
    Admitted,
    /// Every expected host reported success and holds `generation`.
    Published,
    /// The exact `predecessor` may be removed (once).
    Cleanup,
    /// Terminal mixed or unknown evidence: both generations are kept, a human decides (V1
    /// does no automatic repair).
    FailedClosed,
}

impl Phase {
    /// The allowed transitions; see the table in docs/publisher.md.
    pub fn may_become(self, next: Phase) -> bool {
        use Phase::*;
        matches!(
            (self, next),
            (Idle, Admitted)
                | (Admitted, Published)
                | (Admitted, FailedClosed)
                | (Published, Cleanup)
                | (Cleanup, Idle)
        )
    }

    /// The snake_case name used in the row and reports.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Admitted => "admitted",
            Phase::Published => "published",
            Phase::Cleanup => "cleanup",
            Phase::FailedClosed => "failed_closed",
        }
    }
}

/// A generation of the target: a staging table's identity and its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    /// The table holding it, `db.table__<id>`.
    pub table: String,
    /// sha256 over the inventory digest and the epoch that produced it.
    pub digest: String,
}

/// The replicated table the row governs, bound exactly so a swapped table is noticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableIdentity {
    pub uuid: String,
    pub engine: String,
    pub schema: String,
    pub keeper_paths: Vec<String>,
}

/// The `authority` column, serialized as JSON with fields in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authority {
    /// Row format; 1.
    pub format: u32,
    pub target: String,
    pub phase: Phase,
    /// Bumped by every admission; permits are per (target, epoch).
    pub epoch: u64,
    /// Scheduler-stable identity of the operation that last admitted (same schedule, same id).
    pub operation_id: Option<String>,
    pub inventory_digest: Option<String>,
    /// The live generation (Idle) or the one being published.
    pub generation: Generation,
    /// The generation `generation` replaces, while it is kept.
    pub predecessor: Option<Generation>,
    pub table: TableIdentity,
    /// `settings['log_comment']` of the one DDL entry of this epoch.
    pub ddl_token: Option<String>,
}

impl Authority {
    /// The JSON text stored in the row.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("authority serializes")
    }

    /// Parses the row's text; `None` when it is not a well-formed authority.
    pub fn from_text(s: &str) -> Option<Authority> {
        serde_json::from_str(s).ok().filter(|a: &Authority| a.format == 1)
    }

    /// The next row, if `self.phase` may become `next.phase` and the epoch rule holds (only
    /// admission bumps it, by exactly one).
    pub fn check_transition(&self, next: &Authority) -> Result<(), TransitionError> {
        if !self.phase.may_become(next.phase) {
            return Err(TransitionError::Phase { from: self.phase.name(), to: next.phase.name() });
        }
        let want = if next.phase == Phase::Admitted { self.epoch + 1 } else { self.epoch };
        if next.epoch != want || next.target != self.target {
            return Err(TransitionError::Epoch { from: self.epoch, to: next.epoch, want });
        }
        Ok(())
    }
}

/// An authority row that may not follow the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionError {
    /// The ADR's phase order does not allow this step.
    Phase { from: &'static str, to: &'static str },
    /// The epoch did not move as the step requires (only admission bumps it, by one), or the
    /// target changed.
    Epoch { from: u64, to: u64, want: u64 },
}

impl std::fmt::Display for TransitionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransitionError::Phase { from, to } => write!(f, "{from} -> {to} is not an allowed transition"),
            TransitionError::Epoch { from, to, want } => {
                write!(f, "epoch {from} -> {to} (want {want}) or target changed")
            }
        }
    }
}

impl std::error::Error for TransitionError {}

/// Hex sha256 of `parts` joined by NUL.
pub fn digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(p.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_documented_transitions_are_allowed() {
        use Phase::*;
        let all = [Idle, Admitted, Published, Cleanup, FailedClosed];
        let allowed: Vec<_> =
            all.iter().flat_map(|a| all.iter().map(move |b| (*a, *b))).filter(|(a, b)| a.may_become(*b)).collect();
        assert_eq!(
            allowed,
            vec![
                (Idle, Admitted),
                (Admitted, Published),
                (Admitted, FailedClosed),
                (Published, Cleanup),
                (Cleanup, Idle)
            ]
        );
        assert!(!FailedClosed.may_become(Admitted), "no automatic repair in V1");
        assert_eq!(digest(&["a", "b"]).len(), 64);
        assert_ne!(digest(&["a", "b"]), digest(&["ab"]));
    }
}
