//! The lock workload's guarantee: ZooKeeper's lock recipe (an ephemeral-sequential node per
//! contender; the lowest holds the lock; its sequence number is the fencing token) never lets
//! two holders' fencing-token intervals overlap, session expiry included.
//!
//! The history events it reads (what the lock workload emits, per process):
//! - `Call::Acquire` ending ok with `Ret::Token { token }`: the process created its node and
//!   then saw it lowest, i.e. every lower token's node was gone at some instant of the op;
//! - `Call::Fenced { token, value }` ending ok: a multi that checked the token's node still
//!   existed and set the resource, so that node existed at some instant of the op;
//! - `Call::Release { token }` ending ok: the delete of the token's node succeeded, so it
//!   existed at some instant of the op.
//!
//! Unknown and failed ops prove nothing and are ignored; a session that expired loses its
//! node on the server, which the checker need not be told: what a client *believes* does not
//! matter, only what the server confirmed.
//!
//! A token's interval runs from its acquire to the last op that proved its node alive.
//! Sequence numbers only grow and a deleted node never comes back, so once holder `t2` saw
//! itself lowest, no lower token `t1` can be proved alive later: an op proving `t1` alive
//! that *began* after `t2`'s acquire *ended* is two holders at once. Tokens must also be
//! unique: two acquires with the same token had the same node.

use std::collections::BTreeMap;

use super::{CheckResult, Violation};
use crate::history::{Call, History, Op, Ret};

/// Violations listed per kind before the rest are only counted.
const PER_KIND: usize = 10;

/// Checks the lock workload.
pub fn check(history: &History) -> CheckResult {
    let mut acquired: BTreeMap<i64, Vec<&Op>> = BTreeMap::new();
    // Per token, the ops that prove its node alive, and the one that began last.
    let mut latest_alive: BTreeMap<i64, &Op> = BTreeMap::new();
    let (mut fenced, mut releases) = (0, 0);
    for o in history.ops.iter().filter(|o| o.ok()) {
        let token = match (&o.call, &o.ret) {
            (Call::Acquire, Ret::Token { token }) => {
                acquired.entry(*token).or_default().push(o);
                *token
            }
            (Call::Fenced { token, .. }, _) => {
                fenced += 1;
                *token
            }
            (Call::Release { token }, _) => {
                releases += 1;
                *token
            }
            _ => continue,
        };
        let e = latest_alive.entry(token).or_insert(o);
        if o.invoke_ns > e.invoke_ns {
            *e = o;
        }
    }
    let mut violations = Vec::new();
    for (token, ops) in &acquired {
        if ops.len() > 1 {
            let msg = format!("fencing token {token} was handed to {} acquires: two holders with one node", ops.len());
            violations.push(Violation::over(
                history,
                msg,
                ops.iter().map(|o| o.id).collect(),
                Some(format!("token {token}")),
            ));
        }
    }
    // Sweep the holders in token order, keeping the lower token proved alive latest: it
    // must have begun before each higher holder's acquire ended.
    let mut overlap = 0;
    let mut lower: Option<(i64, &Op)> = None;
    for (token, alive) in &latest_alive {
        if let Some(acq) = acquired.get(token).and_then(|a| a.iter().min_by_key(|o| o.complete_ns)) {
            if let Some((t1, late)) = lower.filter(|(_, late)| late.invoke_ns > acq.complete_ns) {
                overlap += 1;
                if overlap <= PER_KIND {
                    let msg = format!(
                        "two lock holders at once: token {token} held the lock from {:.1} ms (its node was lowest), \
                         but token {t1}'s node was still alive after that ({} began at {:.1} ms)",
                        acq.complete_ns as f64 / 1e6,
                        late.call.name(),
                        late.invoke_ns as f64 / 1e6
                    );
                    violations.push(Violation::over(history, msg, vec![acq.id, late.id], Some(format!("token {t1}"))));
                }
            }
        }
        if lower.is_none_or(|(_, l)| alive.invoke_ns > l.invoke_ns) {
            lower = Some((*token, alive));
        }
    }
    let summary = format!(
        "{} tokens acquired, {fenced} fenced writes and {releases} releases acknowledged; {overlap} overlapping holders",
        acquired.len()
    );
    CheckResult::from_violations("lock", summary, violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::history::Outcome;
    use crate::testutil::Hist;

    fn acquire(b: &mut Hist, p: u64, token: i64, a: u64, z: u64) -> usize {
        b.op(p, "lock", Call::Acquire, Outcome::Ok, Ret::Token { token }, a, z)
    }

    fn fenced(b: &mut Hist, p: u64, token: i64, o: Outcome, a: u64, z: u64) -> usize {
        b.op(p, "lock", Call::Fenced { token, value: a as i64 }, o, Ret::None, a, z)
    }

    #[test]
    fn holders_one_after_another_pass_even_when_a_fenced_write_of_the_old_one_is_unknown() {
        let mut b = Hist::default();
        acquire(&mut b, 0, 1, 0, 1);
        fenced(&mut b, 0, 1, Outcome::Ok, 2, 3);
        // The session expires; its next fenced write is lost, and the next holder takes over.
        fenced(&mut b, 0, 1, Outcome::Unknown, 4, 20);
        acquire(&mut b, 1, 2, 3, 6);
        fenced(&mut b, 1, 2, Outcome::Ok, 7, 8);
        // A fenced write of the old holder concurrent with the new acquire may have come first.
        fenced(&mut b, 2, 3, Outcome::Fail, 9, 10);
        b.op(1, "lock", Call::Release { token: 2 }, Outcome::Ok, Ret::None, 9, 10);
        acquire(&mut b, 3, 4, 5, 11);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    }

    #[test]
    fn an_old_holder_alive_after_the_new_one_took_over_fails() {
        let mut b = Hist::default();
        acquire(&mut b, 0, 1, 0, 1);
        let got = acquire(&mut b, 1, 2, 2, 3);
        // Token 1's fenced write began after token 2 saw itself lowest, and succeeded.
        let late = fenced(&mut b, 0, 1, Outcome::Ok, 4, 5);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].ops, vec![got, late], "{r:?}");
        assert!(r.violations[0].message.contains("two lock holders at once"));
        // So does a release of the old one that found its node still there, even one holder
        // later.
        let mut b = Hist::default();
        acquire(&mut b, 0, 1, 0, 1);
        acquire(&mut b, 1, 2, 2, 3);
        let got3 = acquire(&mut b, 2, 3, 2, 4);
        let rel = b.op(0, "lock", Call::Release { token: 1 }, Outcome::Ok, Ret::None, 5, 6);
        let r = check(&b.h);
        assert!(r.violations.iter().any(|v| v.ops == vec![got3, rel]), "{r:?}");
    }

    #[test]
    fn a_token_handed_out_twice_fails() {
        let mut b = Hist::default();
        let a = acquire(&mut b, 0, 5, 0, 1);
        let c = acquire(&mut b, 1, 5, 2, 3);
        let r = check(&b.h);
        assert_eq!(r.violations[0].ops, vec![a, c], "{r:?}");
    }
}
