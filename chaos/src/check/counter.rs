//! The counter workload's guarantee (Jepsen's counter, with ClickHouse's multi of sequential
//! creates): the counter is the number of children of one node, which only grows, and a read
//! after `sync` sees every add acknowledged before it began and nothing more than was tried.
//!
//! The history events it reads:
//! - `Call::CounterAdd { n, guarded }`: a multi of `n` sequential creates plus a version
//!   check; a `guarded` one checks a version the node never has, so it must fail whole
//!   (ok is a violation; unknown counts as not applied);
//! - `Call::CounterRead` ending ok with `Ret::Count { count }`.
//!
//! It checks, for each read: acknowledged adds that ended before it began ≤ count ≤ every
//! unguarded add (ok or unknown) that began before it ended; reads that follow one another in
//! real time never go down; the final reads (one per server, after heal) agree.

use super::{largest_before, CheckResult, Violation};
use crate::history::{Call, History, Op, OpId, Outcome};

/// An unguarded add that was acknowledged or may have happened, or a guarded one that was
/// (wrongly) acknowledged.
struct Add<'a> {
    op: &'a Op,
    n: i64,
    acked: bool,
}

/// Checks the counter workload.
pub fn check(history: &History) -> CheckResult {
    let mut violations = Vec::new();
    let mut adds: Vec<Add> = Vec::new();
    for o in &history.ops {
        let Call::CounterAdd { n, guarded } = o.call else { continue };
        match (guarded, o.outcome) {
            (true, Outcome::Ok) => {
                let msg = format!(
                    "add {} (a multi whose version check must fail) was acknowledged: a failed check did not \
                     fail the multi",
                    o.id
                );
                violations.push(Violation::over(history, msg, vec![o.id], None));
                adds.push(Add { op: o, n, acked: true });
            }
            (false, Outcome::Ok) => adds.push(Add { op: o, n, acked: true }),
            (false, Outcome::Unknown) => adds.push(Add { op: o, n, acked: false }),
            _ => {}
        }
    }
    let reads: Vec<(&Op, i64)> = (history.ops.iter())
        .filter(|o| o.call == Call::CounterRead && o.ok())
        .filter_map(|o| match o.ret {
            crate::history::Ret::Count { count } => Some((o, count)),
            _ => None,
        })
        .collect();
    for (r, count) in &reads {
        // The acknowledged adds that ended before the read began, latest first: the fewest,
        // nearest ones whose sum exceeds the count are the window.
        let mut before: Vec<&Add> = adds.iter().filter(|a| a.acked && a.op.complete_ns < r.invoke_ns).collect();
        let lower: i64 = before.iter().map(|a| a.n).sum();
        if lower > *count {
            before.sort_by_key(|a| std::cmp::Reverse(a.op.complete_ns));
            let (mut sum, mut ops) = (0, vec![r.id]);
            for a in &before {
                if sum > *count {
                    break;
                }
                sum += a.n;
                ops.push(a.op.id);
            }
            let msg = format!(
                "read {} counted {count}, but adds of {lower} were acknowledged before it began (these {} alone add {sum})",
                r.id,
                ops.len() - 1
            );
            violations.push(Violation::over(history, msg, ops, None));
        }
        let tried: Vec<&Add> = adds.iter().filter(|a| a.op.invoke_ns <= r.complete_ns).collect();
        let upper: i64 = tried.iter().map(|a| a.n).sum();
        if *count > upper {
            let unknown: i64 = tried.iter().filter(|a| !a.acked).map(|a| a.n).sum();
            let msg = format!(
                "read {} counted {count}, but adds that began before it ended can make at most {upper} \
                 ({} acknowledged, {unknown} unknown): something added children that nobody added, or a \
                 failed multi kept some of its creates",
                r.id,
                upper - unknown
            );
            violations.push(Violation::over(history, msg, vec![r.id], None));
        }
    }
    violations.extend(decreasing(history, &reads));
    let finals: Vec<&(&Op, i64)> = reads.iter().filter(|(o, _)| o.final_phase).collect();
    if let Some(w) = finals.windows(2).find(|w| w[0].1 != w[1].1) {
        let msg = format!(
            "the final reads disagree: read {} (server {}) counted {}, read {} (server {}) {}",
            w[0].0.id,
            w[0].0.node + 1,
            w[0].1,
            w[1].0.id,
            w[1].0.node + 1,
            w[1].1
        );
        violations.push(Violation::over(history, msg, vec![w[0].0.id, w[1].0.id], None));
    }
    let acked: i64 = adds.iter().filter(|a| a.acked).map(|a| a.n).sum();
    let summary =
        format!("{} adds ({acked} children acknowledged), {} reads ({} final)", adds.len(), reads.len(), finals.len());
    if finals.is_empty() {
        return CheckResult::unknown("counter", format!("{summary}; no final read succeeded"));
    }
    CheckResult::from_violations("counter", summary, violations)
}

/// A read that counted less than a read that ended before it began.
fn decreasing(history: &History, reads: &[(&Op, i64)]) -> Vec<Violation> {
    let count: std::collections::HashMap<OpId, i64> = reads.iter().map(|(o, c)| (o.id, *c)).collect();
    let mut out = Vec::new();
    for (r, best) in largest_before(reads) {
        let count = count[&r.id];
        if let Some((max, earlier)) = best.filter(|(m, _)| *m > count) {
            let msg =
                format!("read {} counted {count} after read {earlier} had counted {max}: the counter went down", r.id);
            out.push(Violation::over(history, msg, vec![earlier, r.id], None));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::history::Ret;
    use crate::testutil::Hist;

    fn add(b: &mut Hist, n: i64, guarded: bool, o: Outcome, a: u64, z: u64) -> usize {
        b.op(0, "", Call::CounterAdd { n, guarded }, o, Ret::None, a, z)
    }

    fn read(b: &mut Hist, count: i64, a: u64, z: u64, fin: bool) -> usize {
        let id = b.op(1, "", Call::CounterRead, Outcome::Ok, Ret::Count { count }, a, z);
        b.last().final_phase = fin;
        id
    }

    #[test]
    fn counts_within_the_bounds_pass() {
        let mut b = Hist::default();
        add(&mut b, 2, false, Outcome::Ok, 0, 1);
        add(&mut b, 3, false, Outcome::Unknown, 0, 1);
        add(&mut b, 3, true, Outcome::Fail, 0, 1);
        add(&mut b, 1, true, Outcome::Unknown, 0, 1);
        read(&mut b, 2, 2, 3, false);
        read(&mut b, 5, 4, 5, true);
        read(&mut b, 5, 4, 5, true);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    }

    #[test]
    fn a_lost_add_a_partial_multi_and_a_count_that_goes_down_fail() {
        let mut b = Hist::default();
        let a = add(&mut b, 2, false, Outcome::Ok, 0, 1);
        let low = read(&mut b, 1, 2, 3, true);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].ops, vec![a, low], "{r:?}");
        // A guarded add's creates showing up: more than could have been added.
        let mut b = Hist::default();
        add(&mut b, 2, false, Outcome::Ok, 0, 1);
        add(&mut b, 3, true, Outcome::Unknown, 0, 1);
        let high = read(&mut b, 4, 2, 3, true);
        let r = check(&b.h);
        assert!(r.violations.iter().any(|v| v.ops == vec![high] && v.message.contains("at most 2")), "{r:?}");
        // A guarded add acknowledged.
        let mut b = Hist::default();
        let g = add(&mut b, 1, true, Outcome::Ok, 0, 1);
        read(&mut b, 1, 2, 3, true);
        assert_eq!(check(&b.h).violations[0].ops, vec![g]);
        // Down between two reads in real time, within the bounds of each.
        let mut b = Hist::default();
        add(&mut b, 3, false, Outcome::Unknown, 0, 1);
        let r1 = read(&mut b, 3, 2, 3, false);
        let r2 = read(&mut b, 0, 4, 5, true);
        let r = check(&b.h);
        assert_eq!(r.violations.len(), 1, "{r:?}");
        assert_eq!(r.violations[0].ops, vec![r1, r2]);
    }

    #[test]
    fn final_reads_that_disagree_fail_and_none_is_unknown() {
        let mut b = Hist::default();
        add(&mut b, 1, false, Outcome::Unknown, 0, 1);
        assert_eq!(check(&b.h).verdict, Verdict::Unknown);
        read(&mut b, 1, 2, 3, true);
        read(&mut b, 0, 2, 3, true);
        let r = check(&b.h);
        assert!(r.violations.iter().any(|v| v.message.contains("final reads disagree")), "{r:?}");
    }
}
