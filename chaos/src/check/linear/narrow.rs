//! One key's check, and the narrowing of a violation to the smallest window that shows it
//! (the steps are described in the parent module's header).
//!
//! Every window the narrowing considers is a *weakening* of the key's history: a history
//! made only easier to linearize, by
//! - observing it at an instant t (ops running at t, or invoked later, as unknown or absent);
//! - starting it at an instant a from any state (ops that ended before a dropped, ops that
//!   span a relaxed to unknown: any linearization of the whole, split at a, linearizes it);
//! - relaxing a recorded op to unknown.
//!
//! A weakening that is impossible proves the history impossible. Dropping an op that is only
//! optional is *not* a weakening (it makes linearizing harder), so a window keeps the ops it
//! relaxed: the evidence is the ops held to their recorded results, and the proof is that
//! they cannot be linearized even when every other op of the window may or may not have
//! taken effect.

use super::register::{lin_ops, RegState, Register, Role};
use super::wgl::{search, Effort, Found};
use super::{KeyVerdict, NARROWING_RUNS, NARROWING_STATES};
use crate::check::Violation;
use crate::history::{History, Op, OpId, Outcome};

/// Window lengths (in completed ops) tried before the narrowing of a whole prefix: most
/// anomalies are local, and a short window from any state is proven impossible at a
/// fraction of the cost of the prefix that holds it.
const SCAN_WINDOWS: [usize; 2] = [32, 512];

/// States a scanned window may explore per op in it.
const SCAN_STATES_PER_OP: u64 = 1000;

/// The ops of one key and what their search has cost.
pub(super) struct KeyCheck<'a> {
    pub ops: Vec<&'a Op>,
    pub init: i64,
    pub budget: u64,
    pub effort: Effort,
    pub runs: usize,
    /// Searches the scan ran (they do not count against the narrowing's).
    pub scan_runs: usize,
}

impl<'a> KeyCheck<'a> {
    /// Runs the search over `roles` (one per op of the key, `None` = left out).
    fn run(&mut self, roles: &[Option<Role>], init: RegState, budget: u64) -> Found {
        let view: Vec<(&Op, Role)> = (self.ops.iter().zip(roles)).filter_map(|(o, r)| r.map(|r| (*o, r))).collect();
        let (found, effort) = search(&Register, init, &lin_ops(&view), budget);
        self.effort.explored += effort.explored;
        self.runs += 1;
        found
    }

    /// Whether `roles` from `init` is proven impossible within `budget` and what is left of
    /// the narrowing's own bounds (the scan's searches, many and small, count only states).
    fn proven(&mut self, roles: &[Option<Role>], init: RegState, budget: u64) -> bool {
        let left = NARROWING_STATES.saturating_sub(self.effort.explored);
        if self.runs >= NARROWING_RUNS + self.scan_runs || left == 0 {
            return false;
        }
        matches!(self.run(roles, init, left.min(budget)), Found::Illegal { .. })
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

    /// `base` from `a` on: recorded ops that ended before `a` drop out, recorded ops that span
    /// `a` become unknown, ops that may still happen stay.
    fn starting_at(&self, base: &[Option<Role>], a: u64) -> Vec<Option<Role>> {
        (self.ops.iter().zip(base))
            .map(|(o, r)| match r {
                Some(Role::AsRecorded) if o.complete_ns < a => None,
                Some(Role::AsRecorded) if o.invoke_ns < a => Some(Role::Relaxed),
                other => *other,
            })
            .collect()
    }

    /// The instants at which a definite op completed, in order.
    fn ends(&self) -> Vec<u64> {
        let mut ends: Vec<u64> =
            self.ops.iter().filter(|o| o.outcome != Outcome::Unknown).map(|o| o.complete_ns).collect();
        ends.sort_unstable();
        ends.dedup();
        ends
    }

    /// Checks the key: linearizable, a violation and its window, or undecided.
    pub fn check(&mut self, key: &str, history: &History) -> KeyVerdict {
        let all: Vec<Option<Role>> = self.ops.iter().map(|_| Some(Role::AsRecorded)).collect();
        let init = RegState::initial(self.init);
        let full = self.run(&all, init, self.budget);
        if matches!(full, Found::Linearizable(_)) {
            return KeyVerdict::Linearizable;
        }
        // Impossible, or too costly to decide: a short window may prove it for much less
        // than the prefix that holds it.
        if let Some(window) = self.scan() {
            return self.report(key, history, window, None, true);
        }
        if full == Found::Exhausted {
            return KeyVerdict::Undecided;
        }
        let (window, t, from_any) = self.narrow_prefix(init);
        self.report(key, history, window, Some(t), from_any)
    }

    /// The first short window, from any state, that is proven impossible.
    fn scan(&mut self) -> Option<Vec<Option<Role>>> {
        let ends = self.ends();
        // The scan gets one budget's worth of states, whatever is left for the narrowing.
        let stop = self.effort.explored + self.budget;
        for w in SCAN_WINDOWS {
            if ends.len() < 2 {
                break;
            }
            let mut k = w.min(ends.len()) - 1;
            loop {
                let a = if k >= w { ends[k - w] } else { 0 };
                let roles = self.starting_at(&self.observed_at(ends[k]), a);
                let size = roles.iter().filter(|r| r.is_some()).count() as u64;
                let left = stop.saturating_sub(self.effort.explored);
                if left == 0 {
                    return None;
                }
                self.scan_runs += 1;
                if self.proven(&roles, RegState::any(), (size * SCAN_STATES_PER_OP).max(2_000).min(left)) {
                    return Some(roles);
                }
                if k == ends.len() - 1 {
                    break;
                }
                k = (k + w / 2).min(ends.len() - 1);
            }
            if w >= ends.len() {
                break;
            }
        }
        None
    }

    /// Steps 1 and 2 on a history proven impossible from `init`: the earliest impossible
    /// observation t, then the latest start from which it still shows from any state.
    fn narrow_prefix(&mut self, init: RegState) -> (Vec<Option<Role>>, u64, bool) {
        // At the last definite completion every definite op is as recorded and only unknown
        // ops are optional (some left out): impossible, as the full search just showed.
        let ends = self.ends();
        let (mut lo, mut hi) = (0, ends.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.proven(&self.observed_at(ends[mid]), init, self.budget) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let t = ends[hi];
        let observed = self.observed_at(t);
        let mut starts: Vec<u64> = (self.ops.iter().zip(&observed))
            .filter(|(_, r)| **r == Some(Role::AsRecorded))
            .map(|(o, _)| o.invoke_ns)
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let (mut window, mut from_any) = (observed.clone(), false);
        let (mut lo, mut hi) = (0usize, starts.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let w = self.starting_at(&observed, starts[mid]);
            if self.proven(&w, RegState::any(), self.budget) {
                (window, from_any) = (w, true);
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (window, t, from_any)
    }

    /// Step 3 on a window proven impossible: relaxes the recorded ops the contradiction does
    /// not need, halves first, then smaller chunks (delta debugging).
    fn minimize(&mut self, mut window: Vec<Option<Role>>, start: RegState) -> Vec<Option<Role>> {
        let mut needed: Vec<usize> = (0..window.len()).filter(|&i| window[i] == Some(Role::AsRecorded)).collect();
        let mut chunk = needed.len().div_ceil(2).max(1);
        while needed.len() > 1 {
            let mut i = 0;
            while i < needed.len() && needed.len() > 1 {
                let end = (i + chunk).min(needed.len());
                let mut w = window.clone();
                for &j in &needed[i..end] {
                    w[j] = Some(Role::Relaxed);
                }
                if self.proven(&w, start, self.budget) {
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
        window
    }

    /// The violation a window proven impossible shows, once minimized; `t` is the earliest
    /// impossible observation, when the narrowing found it.
    fn report(
        &mut self,
        key: &str,
        history: &History,
        window: Vec<Option<Role>>,
        t: Option<u64>,
        from_any: bool,
    ) -> KeyVerdict {
        let start = if from_any { RegState::any() } else { RegState::initial(self.init) };
        let window = self.minimize(window, start);
        let with = |role| -> Vec<OpId> {
            (self.ops.iter().zip(&window)).filter(|(_, r)| **r == Some(role)).map(|(o, _)| o.id).collect()
        };
        let (evidence, maybe) = (with(Role::AsRecorded), with(Role::Relaxed));
        let when = (t.and_then(|t| self.ops.iter().find(|o| o.complete_ns == t && o.outcome != Outcome::Unknown)))
            .map(|o| format!("; the history became impossible when {} returned", o.describe()))
            .unwrap_or_default();
        let from = if from_any { "from any state" } else { "from the initial value" };
        let n = evidence.len();
        let message = format!(
            "{key}: no order of these {n} ops is consistent with a register ({from}), even with the {} other ops \
             that overlap them or whose outcome is unknown taking effect or not{when}",
            maybe.len()
        );
        let violation = Violation::over(history, message, evidence, Some(key.to_string()));
        KeyVerdict::Violation { violation, maybe, from_any }
    }
}
