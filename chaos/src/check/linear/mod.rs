//! Linearizability of the register workload, key by key (a history is linearizable exactly
//! when each key's sub-history is: Herlihy & Wing's locality, which Porcupine calls
//! P-compositionality), with the WGL search of `wgl` and the register model of `register`.
//! An op whose outcome is unknown may take effect at any instant after its invocation, or
//! never: its completion is at +infinity.
//!
//! When a key's history cannot be linearized, the checker narrows it to the smallest window
//! that still cannot, so the report shows a handful of ops instead of thousands. It first
//! scans short overlapping windows (32, then 512 completed ops), each from any state: most
//! anomalies are local, and such a window is proven impossible for a fraction of what the
//! whole prefix costs (a search that fails must exhaust every order it could try). When no
//! short window shows it:
//! 1. the earliest moment t at which the history as observed so far (ops completed by t with
//!    their results, ops still running as unknown) is already impossible: a binary search,
//!    since an observation that is impossible stays impossible;
//! 2. the latest instant a before t such that the ops from a to t, started from *any* state,
//!    still cannot be linearized: ops that ended before a drop out, ops that span a become
//!    unknown (they may have taken effect on either side). A later a only weakens the check
//!    (split any linearization at a), so this is a binary search again;
//! 3. within that window (or the scanned one), ops whose result is not needed to show the
//!    contradiction are relaxed to "unknown", in halves and then in smaller chunks (delta
//!    debugging), leaving the ops that are the evidence.
//!
//! Every narrowing step only weakens the check, and every window is searched before it is
//! kept, so the window it ends with is a proof: the evidence ops, held to their recorded
//! results, cannot be linearized even when every other op of the window (those that overlap
//! them, and every unknown one) may or may not have taken effect. The
//! narrowing's work is bounded (a number of searches and of states); when it runs out it
//! reports the smallest window proven so far.
//!
//! # Layout
//! - `wgl`: the search. - `register`: the model and the history's ops as the search's.
//! - `narrow`: one key's check and the narrowing of its violation.
//! - `tests`: hand-made and synthetic histories; `brute`: a cross-check against brute force.

mod narrow;
pub mod register;
pub mod wgl;

use std::collections::BTreeMap;

use narrow::KeyCheck;
use wgl::Effort;

use super::{CheckResult, Violation};
use crate::history::{Call, History, Op, OpId};

/// States one search may explore before it gives up (then the verdict is unknown).
pub const DEFAULT_BUDGET: u64 = 5_000_000;

/// Searches the narrowing of one key's violation may run.
const NARROWING_RUNS: usize = 400;

/// States the narrowing of one key's violation may explore in all (the first search's
/// included).
const NARROWING_STATES: u64 = 4 * DEFAULT_BUDGET;

/// What one key's check found.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyVerdict {
    Linearizable,
    /// Not linearizable: the evidence (the ops held to their results), the ops of the window
    /// that may or may not have taken effect, and whether the window starts from any state.
    Violation {
        violation: Violation,
        maybe: Vec<OpId>,
        from_any: bool,
    },
    /// The search ran out of budget.
    Undecided,
}

/// Whether an op belongs to the register model.
fn is_register(op: &Op) -> bool {
    matches!(op.call, Call::Read | Call::Write { .. } | Call::Cas { .. })
}

/// Checks the ops of one key (all register ops, in history order), and what it cost.
pub fn check_key(history: &History, key: &str, ops: Vec<&Op>, init: i64, budget: u64) -> (KeyVerdict, Effort) {
    let mut kc = KeyCheck { ops, init, budget, effort: Effort::default(), runs: 0, scan_runs: 0 };
    let verdict = kc.check(key, history);
    (verdict, kc.effort)
}

/// Checks every key of the register workload (initial value `init` at version 0).
pub fn check(history: &History, init: i64, budget: u64) -> CheckResult {
    let mut keys: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| is_register(o)) {
        if let Some(k) = op.key.as_deref() {
            keys.entry(k).or_default().push(op);
        }
    }
    let (mut violations, mut undecided, mut explored, mut checked) = (Vec::new(), Vec::new(), 0u64, 0usize);
    for (key, ops) in &keys {
        checked += ops.len();
        let (verdict, effort) = check_key(history, key, ops.clone(), init, budget);
        match verdict {
            KeyVerdict::Linearizable => {}
            KeyVerdict::Violation { violation, .. } => violations.push(violation),
            KeyVerdict::Undecided => undecided.push(*key),
        }
        explored += effort.explored;
    }
    let summary = format!(
        "{checked} register ops on {} keys, {explored} search states; {} keys not linearizable",
        keys.len(),
        violations.len()
    );
    if violations.is_empty() && !undecided.is_empty() {
        return CheckResult::unknown(
            "linearizable",
            format!("{summary}; the search ran out of its budget of {budget} states on {}", undecided.join(", ")),
        );
    }
    CheckResult::from_violations("linearizable", summary, violations)
}

#[cfg(test)]
mod brute;
#[cfg(test)]
mod tests;
