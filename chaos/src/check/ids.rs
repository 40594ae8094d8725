//! The unique-ids workload's guarantee: sequential creates (one, or a multi of several)
//! hand out sequence numbers that are never handed out twice.
//!
//! The history events it reads: `Call::NewIds { count }` that ended ok with `Ret::Ids { ids }`
//! (the sequence numbers of the nodes created, in the order of the multi's creates). Unknown
//! and failed ones took no number anybody saw, so they constrain nothing. It checks:
//! - no number is returned twice (by two ops, or twice by one);
//! - an op returned `count` numbers, consecutive and increasing: a multi is one transaction,
//!   so nothing can take a number between its creates;
//! - numbers follow real time: an op that began after another ended got larger numbers (the
//!   parent's counter only grows, and creates are linearizable).

use std::collections::HashMap;

use super::{largest_before, CheckResult, Violation};
use crate::history::{Call, History, Op, OpId, Ret};

/// Violations of one kind listed before the rest are only counted.
const PER_KIND: usize = 10;

/// Checks the ids workload.
pub fn check(history: &History) -> CheckResult {
    let ops: Vec<(&Op, &Vec<i64>, usize)> = (history.ops.iter())
        .filter(|o| o.ok())
        .filter_map(|o| match (&o.call, &o.ret) {
            (Call::NewIds { count }, Ret::Ids { ids }) => Some((o, ids, *count)),
            _ => None,
        })
        .collect();
    let attempted = history.ops.iter().filter(|o| matches!(o.call, Call::NewIds { .. })).count();
    let mut violations = Vec::new();
    let mut first: HashMap<i64, OpId> = HashMap::new();
    let mut dup = 0;
    for (o, ids, count) in &ops {
        for id in ids.iter() {
            if let Some(prev) = first.insert(*id, o.id) {
                dup += 1;
                if dup <= PER_KIND {
                    let msg = format!("id {id} was handed out twice (ops {prev} and {})", o.id);
                    violations.push(Violation::over(history, msg, vec![prev, o.id], Some(format!("id{id}"))));
                }
            }
        }
        let consecutive = ids.windows(2).all(|w| w[1] == w[0] + 1);
        if ids.len() != *count || !consecutive {
            let msg = format!(
                "op {} asked for {count} ids in one transaction and got {ids:?}: not {count} consecutive numbers",
                o.id
            );
            violations.push(Violation::over(history, msg, vec![o.id], None));
        }
    }
    violations.extend(real_time(history, &ops));
    let summary = format!("{attempted} id requests, {} ok, {} ids, {dup} handed out twice", ops.len(), first.len());
    CheckResult::from_violations("unique-ids", summary, violations)
}

/// Ops whose numbers are not above every number of an op that ended before they began.
fn real_time(history: &History, ops: &[(&Op, &Vec<i64>, usize)]) -> Vec<Violation> {
    let highest: Vec<(&Op, i64)> = ops.iter().filter_map(|(o, ids, _)| Some((*o, *ids.iter().max()?))).collect();
    let lowest: HashMap<OpId, i64> = ops.iter().filter_map(|(o, ids, _)| Some((o.id, *ids.iter().min()?))).collect();
    let mut out = Vec::new();
    for (o, best) in largest_before(&highest) {
        let (Some((max, before)), Some(low)) = (best, lowest.get(&o.id)) else { continue };
        if *low <= max && out.len() < PER_KIND {
            let msg = format!(
                "op {} got id {low} though op {before}, which ended before it began, already got {max}: \
                 sequence numbers went backwards",
                o.id
            );
            out.push(Violation::over(history, msg, vec![before, o.id], None));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::history::Outcome;
    use crate::testutil::Hist;

    fn ids(b: &mut Hist, p: u64, got: Vec<i64>, a: u64, z: u64) -> usize {
        let count = got.len();
        b.op(p, "", Call::NewIds { count }, Outcome::Ok, Ret::Ids { ids: got }, a, z)
    }

    #[test]
    fn distinct_ids_pass_and_unknown_requests_constrain_nothing() {
        let mut b = Hist::default();
        ids(&mut b, 0, vec![0], 0, 2);
        ids(&mut b, 1, vec![1, 2, 3], 1, 3);
        b.op(2, "", Call::NewIds { count: 2 }, Outcome::Unknown, Ret::None, 1, 5);
        ids(&mut b, 0, vec![6], 4, 6);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    }

    #[test]
    fn an_id_handed_out_twice_fails_naming_both_ops() {
        let mut b = Hist::default();
        let a = ids(&mut b, 0, vec![4], 0, 2);
        let c = ids(&mut b, 1, vec![3, 4], 1, 3);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].ops, vec![a, c], "{r:?}");
        assert!(r.violations[0].message.contains("id 4 was handed out twice"));
    }

    #[test]
    fn a_torn_multi_and_ids_that_go_back_in_time_fail() {
        let mut b = Hist::default();
        let torn = ids(&mut b, 0, vec![1, 5], 0, 1);
        let r = check(&b.h);
        assert!(r.violations.iter().any(|v| v.ops == vec![torn] && v.message.contains("consecutive")), "{r:?}");
        let mut b = Hist::default();
        let early = ids(&mut b, 0, vec![7], 0, 1);
        let late = ids(&mut b, 1, vec![3], 2, 3);
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].ops, vec![early, late]);
        assert!(r.violations[0].message.contains("went backwards"), "{r:?}");
    }
}
