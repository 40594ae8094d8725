//! Linearizability of the register workload, key by key (a history is linearizable exactly
//! when each key's sub-history is: Herlihy & Wing's locality, which Porcupine calls
//! P-compositionality), with the WGL search of `wgl` and the register model of `register`.
//!
//! When a key's history cannot be linearized, the checker narrows it to the smallest window
//! that still cannot, so the report shows a handful of ops instead of thousands:
//! 1. the earliest moment t at which the history as observed so far (ops completed by t with
//!    their results, ops still running as unknown) is already impossible: a binary search,
//!    since an observation that is impossible stays impossible;
//! 2. the latest quiescent point c before t (no completed op spans it) such that the ops from
//!    c to t, started from *any* state, still cannot be linearized: a binary search again;
//! 3. within that window, every op whose result is not needed to show the contradiction is
//!    relaxed to "unknown", one at a time, leaving the ops that are the evidence.
//!
//! Every narrowing step only weakens the check, so the window it ends with is a proof.
//!
//! # Layout
//! - `wgl`: the search. - `register`: the model and the history's ops as the search's.
//! - `tests`: hand-made and synthetic histories; `brute`: a cross-check against brute force.

pub mod register;
pub mod wgl;

use std::collections::BTreeMap;

use register::{lin_ops, RegState, Register, Role};
use wgl::{search, Effort, Found};

use super::{CheckResult, Violation};
use crate::history::{Call, History, Op, OpId, Outcome};

/// States one search may explore before it gives up (then the verdict is unknown).
pub const DEFAULT_BUDGET: u64 = 5_000_000;

/// Searches the narrowing of one key's violation may run.
const NARROWING_RUNS: usize = 400;

/// What one key's check found.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyVerdict {
    Linearizable,
    /// Not linearizable: the evidence.
    Violation(Violation),
    /// The search ran out of budget.
    Undecided,
}

/// Whether an op belongs to the register model.
fn is_register(op: &Op) -> bool {
    matches!(op.call, Call::Read | Call::Write { .. } | Call::Cas { .. })
}

struct KeyCheck<'a> {
    ops: Vec<&'a Op>,
    init: i64,
    budget: u64,
    effort: Effort,
    runs: usize,
}

impl<'a> KeyCheck<'a> {
    /// Runs the search over `roles` (one per op of the key, `None` = left out).
    fn run(&mut self, roles: &[Option<Role>], init: RegState) -> Found {
        let view: Vec<(&Op, Role)> = (self.ops.iter().zip(roles)).filter_map(|(o, r)| r.map(|r| (*o, r))).collect();
        let (found, effort) = search(&Register, init, &lin_ops(&view), self.budget);
        self.effort.explored += effort.explored;
        self.runs += 1;
        found
    }

    /// The history as observed at `t`: done by `t` as recorded (a definite failure as one
    /// that changed nothing), running at `t` or unknown as may-have-happened.
    fn observed_at(&self, t: u64) -> Vec<Option<Role>> {
        (self.ops.iter())
            .map(|o| match () {
                _ if o.invoke_ns > t => None,
                _ if o.outcome != Outcome::Unknown && o.complete_ns <= t => Some(Role::AsRecorded),
                _ => Some(Role::Relaxed),
            })
            .collect()
    }

    /// `base` cut at `c`: recorded ops started before `c` drop out (they all ended before
    /// it), unknown ones stay as they may still happen.
    fn cut(&self, base: &[Option<Role>], c: u64) -> Vec<Option<Role>> {
        (self.ops.iter().zip(base))
            .map(|(o, r)| match r {
                Some(Role::AsRecorded) if o.invoke_ns < c => None,
                other => *other,
            })
            .collect()
    }

    fn illegal(&mut self, roles: &[Option<Role>], init: RegState) -> Option<bool> {
        match self.run(roles, init) {
            Found::Linearizable(_) => Some(false),
            Found::Illegal { .. } => Some(true),
            Found::Exhausted => None,
        }
    }

    fn check(&mut self, key: &str, history: &History) -> KeyVerdict {
        let all: Vec<Option<Role>> = self.ops.iter().map(|_| Some(Role::AsRecorded)).collect();
        let init = RegState::initial(self.init);
        match self.run(&all, init) {
            Found::Linearizable(_) => return KeyVerdict::Linearizable,
            Found::Exhausted => return KeyVerdict::Undecided,
            Found::Illegal { .. } => {}
        }
        // 1. The earliest impossible observation. At the last definite completion every
        //    definite op is as recorded and only unknown ops are optional (some left out,
        //    which cannot make an impossible history possible), so the search starts impossible.
        let mut ends: Vec<u64> =
            self.ops.iter().filter(|o| o.outcome != Outcome::Unknown).map(|o| o.complete_ns).collect();
        ends.sort_unstable();
        ends.dedup();
        let (mut lo, mut hi) = (0, ends.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.illegal(&self.observed_at(ends[mid]), init) {
                Some(true) => hi = mid,
                Some(false) => lo = mid + 1,
                None => return KeyVerdict::Undecided,
            }
        }
        let t = ends[lo];
        let observed = self.observed_at(t);
        // 2. The latest quiescent cut that still shows it, from any state.
        let mut cuts = Vec::new();
        let mut reach = 0u64;
        let mut recorded: Vec<&&Op> =
            (self.ops.iter().zip(&observed)).filter(|(_, r)| **r == Some(Role::AsRecorded)).map(|(o, _)| o).collect();
        recorded.sort_by_key(|o| o.invoke_ns);
        for o in &recorded {
            if o.invoke_ns > reach {
                cuts.push(o.invoke_ns);
            }
            reach = reach.max(o.complete_ns);
        }
        let (mut window, mut from_any) = (observed.clone(), false);
        let (mut lo, mut hi) = (0usize, cuts.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let w = self.cut(&observed, cuts[mid]);
            match self.illegal(&w, RegState::any()) {
                Some(true) => {
                    (window, from_any) = (w, true);
                    lo = mid + 1;
                }
                Some(false) => hi = mid,
                None => return KeyVerdict::Undecided,
            }
        }
        let start_state = if from_any { RegState::any() } else { init };
        // 3. Relax what the contradiction does not need: halves first, then smaller chunks
        //    (delta debugging), so a window of n ops costs O(k log n) searches for k left.
        let mut needed: Vec<usize> = (0..window.len()).filter(|&i| window[i] == Some(Role::AsRecorded)).collect();
        let mut chunk = needed.len().div_ceil(2).max(1);
        while needed.len() > 1 && self.runs < NARROWING_RUNS {
            let mut i = 0;
            while i < needed.len() && needed.len() > 1 {
                let end = (i + chunk).min(needed.len());
                let mut w = window.clone();
                for &j in &needed[i..end] {
                    w[j] = Some(Role::Relaxed);
                }
                if self.illegal(&w, start_state) == Some(true) {
                    window = w;
                    needed.drain(i..end);
                } else {
                    i = end;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
        let evidence: Vec<OpId> =
            (self.ops.iter().zip(&window)).filter(|(_, r)| **r == Some(Role::AsRecorded)).map(|(o, _)| o.id).collect();
        let last = (self.ops.iter())
            .find(|o| o.complete_ns == t && o.outcome != Outcome::Unknown)
            .map(|o| o.describe())
            .unwrap_or_default();
        let from = if from_any { "from any state" } else { "from the initial value" };
        let mut v = Violation::over(
            history,
            format!(
                "{key}: no order of these {} ops is consistent with a register ({from}); the history became \
                 impossible when {last} returned",
                evidence.len()
            ),
            evidence,
            Some(key.to_string()),
        );
        v.end_ns = v.end_ns.max(t);
        KeyVerdict::Violation(v)
    }
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
        let mut kc = KeyCheck { ops: ops.clone(), init, budget, effort: Effort::default(), runs: 0 };
        match kc.check(key, history) {
            KeyVerdict::Linearizable => {}
            KeyVerdict::Violation(v) => violations.push(v),
            KeyVerdict::Undecided => undecided.push(*key),
        }
        explored += kc.effort.explored;
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
