//! Wing & Gong's linearizability search with Lowe's memoization (the algorithm Porcupine and
//! Knossos's `wgl` run), written for histories with unknown outcomes.
//!
//! The history is a list of call and return entries in time order (a call before a return at
//! the same instant, so ops that touch are concurrent). The search linearizes, depth first,
//! any op whose call comes before the first return still in the list, lifting both of its
//! entries out; when it reaches a return entry it cannot pass, it backtracks. A state is the
//! set of ops linearized so far plus the model's state; Lowe's cache skips a state seen
//! before, which is what makes the search usually linear in the history's length.
//!
//! Unknown outcomes are *optional* ops: they have a call and no return, and a linearization
//! may leave them out (as if they never happened, or happened after everything else). Four
//! refinements keep many of them cheap, all exact:
//! - the search tries every required candidate before any optional one (an optional op is
//!   only worth placing where the required ops cannot go on without it);
//! - their calls are kept in a list of their own, so the required ops' pass never walks over
//!   the unknown ops that pile up, never placed, at the front of the history;
//! - optional ops with identical inputs (a `class`) are interchangeable once called, so only
//!   the earliest not yet placed of each class is a candidate;
//! - an optional op is not placed where it leads to a state the current one dominates
//!   ([`Model::dominates`]): leaving it out keeps every door open that placing it would.
//!
//! The set of linearized ops is kept as a 128-bit Zobrist hash (xor of a random key per op),
//! so a step costs O(1) instead of copying a bitset; two different sets share a hash with
//! probability about 2^-128 per pair.

use std::collections::HashSet;
use std::hash::Hash;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A sequential specification.
pub trait Model {
    type State: Clone + Eq + Hash;
    type Input;
    type Output;

    /// The state after the op, when it can take effect in `state` with `output` (`None`: the
    /// outcome is unknown). `None` when it cannot: for a required op this order is
    /// impossible; for an optional one, placing it here would achieve nothing.
    fn step(&self, state: &Self::State, input: &Self::Input, output: Option<&Self::Output>) -> Option<Self::State>;

    /// Whether every continuation possible from `b` is possible from `a` too. Placing an
    /// optional op that leads from `a` to such a `b` gains nothing, so the search skips it
    /// (exact: the op could as well be left out). The default knows no dominance.
    fn dominates(&self, a: &Self::State, b: &Self::State) -> bool {
        let _ = (a, b);
        false
    }
}

/// One op of the history the search sees.
#[derive(Debug, Clone)]
pub struct LinOp<I, O> {
    pub call: u64,
    /// `None`: an optional op (unknown outcome), which may be left out.
    pub ret: Option<u64>,
    pub input: I,
    /// `None` for an optional op.
    pub output: Option<O>,
    /// Optional ops of one class are interchangeable (same input, unknown output).
    pub class: Option<u32>,
    /// The caller's id for the op.
    pub tag: usize,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A linearization: the tags of the ops placed, in order (optional ops left out).
    Linearizable(Vec<usize>),
    /// None exists. `depth` is the most ops any attempt linearized; `stuck` the tag of the op
    /// whose return that attempt could not pass.
    Illegal { depth: usize, stuck: Option<usize> },
    /// The search gave up after exploring its budget of states.
    Exhausted,
}

/// How much the search did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effort {
    /// Steps of the model that produced a new state.
    pub explored: u64,
}

/// The head of the list of required ops' calls and returns.
const HEAD: usize = 0;
/// The head of the list of optional ops' calls, kept apart so that the unknown ops that are
/// never placed (they pile up at the front) cost nothing while required ops go ahead.
const OPT_HEAD: usize = 1;
const NIL: usize = usize::MAX;

/// The two entry lists, doubly linked so that lifting an op and undoing it are O(1).
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// The op of each entry, whether the entry is its return, and its instant.
    op: Vec<usize>,
    is_ret: Vec<bool>,
    time: Vec<u64>,
    call_at: Vec<usize>,
    ret_at: Vec<usize>,
}

impl Entries {
    fn new<I, O>(ops: &[LinOp<I, O>]) -> Entries {
        // (instant, is a return, op): required ops' calls and returns, optional ops' calls.
        type Entry = (u64, bool, usize);
        let (mut main, mut opt): (Vec<Entry>, Vec<Entry>) = (Vec::new(), Vec::new());
        for (i, o) in ops.iter().enumerate() {
            match o.ret {
                Some(r) => main.extend([(o.call, false, i), (r.max(o.call), true, i)]),
                None => opt.push((o.call, false, i)),
            }
        }
        // Calls sort before returns at the same instant (false < true).
        main.sort_unstable();
        opt.sort_unstable();
        let n = 2 + main.len() + opt.len();
        let mut e = Entries {
            next: vec![NIL; n],
            prev: vec![NIL; n],
            op: vec![0; n],
            is_ret: vec![false; n],
            time: vec![0; n],
            call_at: vec![NIL; ops.len()],
            ret_at: vec![NIL; ops.len()],
        };
        let mut x = 2;
        for (head, list) in [(HEAD, &main), (OPT_HEAD, &opt)] {
            let mut p = head;
            for &(t, r, i) in list {
                (e.next[p], e.prev[x]) = (x, p);
                (e.op[x], e.is_ret[x], e.time[x]) = (i, r, t);
                if r {
                    e.ret_at[i] = x;
                } else {
                    e.call_at[i] = x;
                }
                (p, x) = (x, x + 1);
            }
        }
        e
    }

    /// The first return entry still in the list (there is one while a required op is left).
    fn first_return(&self) -> usize {
        let mut x = self.next[HEAD];
        while x != NIL && !self.is_ret[x] {
            x = self.next[x];
        }
        x
    }

    fn unlink(&mut self, x: usize) {
        let (p, n) = (self.prev[x], self.next[x]);
        self.next[p] = n;
        if n != NIL {
            self.prev[n] = p;
        }
    }

    /// Undoes the `unlink` of `x`, which must be the most recent one not yet undone.
    fn relink(&mut self, x: usize) {
        let (p, n) = (self.prev[x], self.next[x]);
        self.next[p] = x;
        if n != NIL {
            self.prev[n] = x;
        }
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call_at[op]);
        if self.ret_at[op] != NIL {
            self.unlink(self.ret_at[op]);
        }
    }

    fn unlift(&mut self, op: usize) {
        if self.ret_at[op] != NIL {
            self.relink(self.ret_at[op]);
        }
        self.relink(self.call_at[op]);
    }
}

struct Frame<S> {
    op: usize,
    optional_pass: bool,
    state: S,
    set: u128,
}

/// Searches for a linearization of `ops` from `init`, exploring at most `budget` states.
pub fn search<M: Model>(model: &M, init: M::State, ops: &[LinOp<M::Input, M::Output>], budget: u64) -> (Found, Effort) {
    let mut effort = Effort::default();
    let mut remaining = ops.iter().filter(|o| o.ret.is_some()).count();
    if remaining == 0 {
        return (Found::Linearizable(Vec::new()), effort);
    }
    let mut e = Entries::new(ops);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_1a7e);
    let keys: Vec<u128> = ops.iter().map(|_| rng.gen()).collect();
    // Each class's members in call order, and how many of them are placed (always a prefix).
    let classes = ops.iter().filter_map(|o| o.class).max().map_or(0, |c| c as usize + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); classes];
    let mut by_call: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].ret.is_none()).collect();
    by_call.sort_by_key(|&i| (ops[i].call, i));
    for i in by_call {
        if let Some(c) = ops[i].class {
            members[c as usize].push(i);
        }
    }
    let mut placed = vec![0usize; classes];
    let mut cache: HashSet<(u128, M::State), foldhash::fast::FixedState> = HashSet::default();
    let mut stack: Vec<Frame<M::State>> = Vec::new();
    let (mut state, mut set) = (init, 0u128);
    let (mut depth, mut stuck) = (0usize, None);
    let (mut cur, mut optional_pass) = (e.next[HEAD], false);
    // In the optional pass: the first return, which no op called after it may precede.
    let mut limit = NIL;
    loop {
        let end_of_pass =
            if optional_pass { cur == NIL || e.time[cur] > e.time[limit] } else { cur == NIL || e.is_ret[cur] };
        if end_of_pass {
            if !optional_pass {
                (cur, optional_pass, limit) = (e.next[OPT_HEAD], true, cur);
                continue;
            }
            if stack.len() >= depth && limit != NIL {
                (depth, stuck) = (stack.len(), Some(ops[e.op[limit]].tag));
            }
            let Some(f) = stack.pop() else {
                return (Found::Illegal { depth, stuck }, effort);
            };
            (state, set) = (f.state, f.set);
            e.unlift(f.op);
            if ops[f.op].ret.is_some() {
                remaining += 1;
            } else if let Some(c) = ops[f.op].class {
                placed[c as usize] -= 1;
            }
            (cur, optional_pass) = (e.next[e.call_at[f.op]], f.optional_pass);
            if optional_pass {
                limit = e.first_return();
            }
            continue;
        }
        let i = e.op[cur];
        let op = &ops[i];
        let optional = op.ret.is_none();
        let eligible = optional == optional_pass
            && op.class.is_none_or(|c| members[c as usize].get(placed[c as usize]) == Some(&i));
        if eligible {
            let step = model.step(&state, &op.input, op.output.as_ref());
            if let Some(next) = step.filter(|n| !optional || !model.dominates(&state, n)) {
                let next_set = set ^ keys[i];
                if cache.insert((next_set, next.clone())) {
                    effort.explored += 1;
                    if effort.explored > budget {
                        return (Found::Exhausted, effort);
                    }
                    stack.push(Frame { op: i, optional_pass, state: std::mem::replace(&mut state, next), set });
                    set = next_set;
                    e.lift(i);
                    if optional {
                        if let Some(c) = op.class {
                            placed[c as usize] += 1;
                        }
                    } else {
                        remaining -= 1;
                        if remaining == 0 {
                            return (Found::Linearizable(stack.iter().map(|f| ops[f.op].tag).collect()), effort);
                        }
                    }
                    (cur, optional_pass) = (e.next[HEAD], false);
                    continue;
                }
            }
        }
        cur = e.next[cur];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register of integers: write(v) always works, read must see the last value.
    struct Reg;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum In {
        W(i64),
        R,
    }

    impl Model for Reg {
        type State = i64;
        type Input = In;
        type Output = i64;
        fn step(&self, s: &i64, input: &In, output: Option<&i64>) -> Option<i64> {
            match (input, output) {
                (In::W(v), _) => Some(*v),
                (In::R, Some(o)) => (o == s).then_some(*s),
                (In::R, None) => None,
            }
        }
    }

    fn op(tag: usize, call: u64, ret: Option<u64>, input: In, output: Option<i64>) -> LinOp<In, i64> {
        LinOp { call, ret, input, output, class: None, tag }
    }

    #[test]
    fn a_read_of_a_concurrent_write_is_linearizable_a_stale_one_is_not() {
        // w(1) [0,10], r -> 1 [5,6]: the write may take effect before the read.
        let ok = [op(0, 0, Some(10), In::W(1), Some(0)), op(1, 5, Some(6), In::R, Some(1))];
        assert!(matches!(search(&Reg, 0, &ok, 1000).0, Found::Linearizable(_)));
        // w(1) [0,2], then r -> 0 [5,6]: the read saw the old value after the write returned.
        let bad = [op(0, 0, Some(2), In::W(1), Some(0)), op(1, 5, Some(6), In::R, Some(0))];
        assert_eq!(search(&Reg, 0, &bad, 1000).0, Found::Illegal { depth: 1, stuck: Some(1) });
    }

    #[test]
    fn an_unknown_write_may_happen_late_or_never() {
        // w(1) unknown at 0; r -> 0 at [5,6]; r -> 1 at [7,8]: it happened between them.
        let late =
            [op(0, 0, None, In::W(1), None), op(1, 5, Some(6), In::R, Some(0)), op(2, 7, Some(8), In::R, Some(1))];
        assert_eq!(search(&Reg, 0, &late, 1000).0, Found::Linearizable(vec![1, 0, 2]));
        // Never observed: it is left out.
        let never = [op(0, 0, None, In::W(1), None), op(1, 5, Some(6), In::R, Some(0))];
        assert_eq!(search(&Reg, 0, &never, 1000).0, Found::Linearizable(vec![1]));
        // Seen, then unseen again with no other write: impossible.
        let flicker =
            [op(0, 0, None, In::W(1), None), op(1, 5, Some(6), In::R, Some(1)), op(2, 7, Some(8), In::R, Some(0))];
        assert!(matches!(search(&Reg, 0, &flicker, 1000).0, Found::Illegal { .. }));
    }

    #[test]
    fn interchangeable_unknowns_do_not_blow_up() {
        // 40 unknown writes of one unobservable value, and reads of 0 between: without the
        // class rule every subset of the unknowns would be a distinct state.
        let mut ops = Vec::new();
        for i in 0..40u64 {
            ops.push(LinOp { call: i * 10, ret: None, input: In::W(-1), output: None, class: Some(0), tag: ops.len() });
            ops.push(op(ops.len(), i * 10 + 1, Some(i * 10 + 2), In::R, Some(0)));
        }
        let (found, effort) = search(&Reg, 0, &ops, 1_000_000);
        assert!(matches!(found, Found::Linearizable(_)));
        assert!(effort.explored < 200, "explored {}", effort.explored);
    }

    #[test]
    fn the_budget_is_honoured() {
        let ops = [op(0, 0, Some(10), In::W(1), Some(0)), op(1, 5, Some(6), In::R, Some(1))];
        assert_eq!(search(&Reg, 0, &ops, 0).0, Found::Exhausted);
    }
}
