//! The set workload's guarantee: every read (after `sync`) holds every element whose add was
//! acknowledged before the read began, or that an earlier read already held (the set only
//! grows, so an element once seen stays, whether its add was acknowledged or unknown), and
//! nothing nobody tried to add, nor anything whose add failed or began after the read; each
//! element appears once; the final reads (one per server, after every fault was healed)
//! agree. Unknown adds may be in the set or not.
//!
//! The history events it reads: `Call::Add { element }` (any outcome) and `Call::ReadSet`
//! ending ok with `Ret::Elements`, `final_phase` on the reads after heal.

use std::collections::{BTreeMap, HashMap};

use super::{CheckResult, Violation};
use crate::history::{Call, History, Op, OpId, Outcome, Ret};

/// Checks the set workload.
pub fn check(history: &History) -> CheckResult {
    let adds: HashMap<i64, &Op> = (history.ops.iter())
        .filter_map(|o| match o.call {
            Call::Add { element } => Some((element, o)),
            _ => None,
        })
        .collect();
    let reads: Vec<(&Op, &Vec<i64>)> = (history.ops.iter())
        .filter(|o| o.call == Call::ReadSet && o.ok())
        .filter_map(|o| match &o.ret {
            Ret::Elements { elements } => Some((o, elements)),
            _ => None,
        })
        .collect();
    let acked = adds.values().filter(|o| o.ok()).count();
    // From when each element is known to be in the set, and what shows it: its add's
    // acknowledgement, or the end of the first read that held it (an unknown add that a read
    // saw has happened, and the set only grows).
    let mut known: HashMap<i64, (u64, OpId)> = HashMap::new();
    for a in adds.values().filter(|o| o.ok()) {
        let Call::Add { element } = a.call else { continue };
        known.insert(element, (a.complete_ns, a.id));
    }
    for (r, elements) in &reads {
        for e in elements.iter() {
            let k = known.entry(*e).or_insert((r.complete_ns, r.id));
            if r.complete_ns < k.0 {
                *k = (r.complete_ns, r.id);
            }
        }
    }
    let mut present_from: Vec<(u64, i64, OpId)> = known.iter().map(|(e, (t, by))| (*t, *e, *by)).collect();
    present_from.sort_unstable();
    let mut violations = Vec::new();
    // Each lost element once: at the first read that should have held it.
    let mut reported_lost: BTreeMap<i64, ()> = BTreeMap::new();
    for (r, elements) in &reads {
        let held: HashMap<i64, usize> = elements.iter().fold(HashMap::new(), |mut m, e| {
            *m.entry(*e).or_default() += 1;
            m
        });
        for (e, n) in &held {
            match adds.get(e) {
                None => violations.push(Violation::over(
                    history,
                    format!("read {} holds element {e}, which nobody tried to add", r.id),
                    vec![r.id],
                    Some(format!("e{e}")),
                )),
                Some(a) if a.invoke_ns > r.complete_ns => violations.push(Violation::over(
                    history,
                    format!("read {} holds element {e}, whose add began only after the read returned", r.id),
                    vec![a.id, r.id],
                    Some(format!("e{e}")),
                )),
                Some(a) if a.outcome == Outcome::Fail => violations.push(Violation::over(
                    history,
                    format!("read {} holds element {e}, whose add failed", r.id),
                    vec![a.id, r.id],
                    Some(format!("e{e}")),
                )),
                _ => {}
            }
            if *n > 1 {
                violations.push(Violation::over(
                    history,
                    format!("read {} holds element {e} {n} times", r.id),
                    vec![r.id],
                    Some(format!("e{e}")),
                ));
            }
        }
        for &(t, element, by) in present_from.iter().take_while(|(t, _, _)| *t < r.invoke_ns) {
            if !held.contains_key(&element) && reported_lost.insert(element, ()).is_none() {
                let how = if history.ops[by].call == Call::ReadSet { "seen by read" } else { "acknowledged by add" };
                violations.push(Violation::over(
                    history,
                    format!(
                        "element {element} was in the set at {:.1} ms ({how} {by}) but read {} (after sync, from \
                         {:.1} ms) does not hold it",
                        t as f64 / 1e6,
                        r.id,
                        r.invoke_ns as f64 / 1e6
                    ),
                    vec![by, r.id],
                    Some(format!("e{element}")),
                ));
            }
        }
    }
    let finals: Vec<&(&Op, &Vec<i64>)> = reads.iter().filter(|(o, _)| o.final_phase).collect();
    let disagree = finals.windows(2).find(|w| sorted(w[0].1) != sorted(w[1].1));
    if let Some(w) = disagree {
        violations.push(Violation::over(
            history,
            format!(
                "the final reads disagree: read {} (server {}) holds {} elements, read {} (server {}) {}",
                w[0].0.id,
                w[0].0.node + 1,
                w[0].1.len(),
                w[1].0.id,
                w[1].0.node + 1,
                w[1].1.len()
            ),
            vec![w[0].0.id, w[1].0.id],
            None,
        ));
    }
    let unknown = adds.values().filter(|o| o.outcome == Outcome::Unknown).count();
    let summary = format!(
        "{} adds ({} acknowledged, {unknown} unknown), {} reads ({} final)",
        adds.len(),
        acked,
        reads.len(),
        finals.len()
    );
    if finals.is_empty() {
        return CheckResult::unknown("set", format!("{summary}; no final read succeeded"));
    }
    CheckResult::from_violations("set", summary, violations)
}

fn sorted(v: &[i64]) -> Vec<i64> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v
}

/// Ids of ops, for tests.
#[cfg(test)]
fn ids(v: &super::Violation) -> Vec<OpId> {
    v.ops.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::testutil::Hist;

    fn read(b: &mut Hist, elements: Vec<i64>, a: u64, z: u64, fin: bool) -> usize {
        let id = b.op(9, "", Call::ReadSet, Outcome::Ok, Ret::Elements { elements }, a, z);
        b.last().final_phase = fin;
        id
    }

    #[test]
    fn an_acknowledged_add_missing_from_a_later_read_is_lost() {
        let mut b = Hist::default();
        let a1 = b.op(0, "", Call::Add { element: 1 }, Outcome::Ok, Ret::None, 0, 1);
        b.op(1, "", Call::Add { element: 2 }, Outcome::Unknown, Ret::None, 0, 1);
        read(&mut b, vec![1], 2, 3, true);
        assert_eq!(check(&b.h).verdict, Verdict::Pass, "an unknown add may be missing");
        let r = read(&mut b, vec![2], 4, 5, true);
        let res = check(&b.h);
        assert_eq!(res.verdict, Verdict::Fail);
        assert!(res.violations.iter().any(|v| ids(v) == vec![a1, r] && v.message.contains("element 1")), "{res:?}");
        assert!(res.violations.iter().any(|v| v.message.contains("final reads disagree")));
    }

    #[test]
    fn an_element_a_read_saw_cannot_vanish_even_if_its_add_is_unknown() {
        let mut b = Hist::default();
        b.op(0, "", Call::Add { element: 1 }, Outcome::Unknown, Ret::None, 0, 1);
        let saw = read(&mut b, vec![1], 2, 3, false);
        read(&mut b, vec![1], 4, 5, true);
        assert_eq!(check(&b.h).verdict, Verdict::Pass);
        let lost = read(&mut b, vec![], 6, 7, true);
        let res = check(&b.h);
        let v = res.violations.iter().find(|v| v.message.contains("seen by read")).expect("a lost element");
        assert_eq!(ids(v), vec![saw, lost], "{res:?}");
    }

    #[test]
    fn an_element_nobody_added_or_whose_add_failed_is_caught() {
        let mut b = Hist::default();
        b.op(0, "", Call::Add { element: 1 }, Outcome::Fail, Ret::None, 0, 1);
        read(&mut b, vec![1, 5, 5], 2, 3, true);
        let res = check(&b.h);
        let msgs: Vec<&str> = res.violations.iter().map(|v| v.message.as_str()).collect();
        assert!(msgs.iter().any(|m| m.contains("add failed")), "{msgs:?}");
        assert!(msgs.iter().any(|m| m.contains("nobody tried")), "{msgs:?}");
        assert!(msgs.iter().any(|m| m.contains("2 times")), "{msgs:?}");
    }

    #[test]
    fn without_a_final_read_the_verdict_is_unknown() {
        let mut b = Hist::default();
        b.op(0, "", Call::Add { element: 1 }, Outcome::Ok, Ret::None, 0, 1);
        assert_eq!(check(&b.h).verdict, Verdict::Unknown);
    }
}
