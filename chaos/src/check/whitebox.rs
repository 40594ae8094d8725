//! White-box checks, for runs on an embedded testkeeper cluster, whose nodes the runner can
//! look inside. The runner fills a [`WhiteBox`] (plain data, no server types) and the checker
//! decides:
//! - every acknowledged write is in the committed log exactly once: each [`Effect`] of an op
//!   that ended ok matches exactly one effect of one committed entry (never zero, never twice:
//!   a write applied twice, e.g. a retried proposal committed again, is as wrong as a lost one);
//! - replicas agree: every node that applied an index has the same digest after it (a node
//!   that re-applies an index after a restart must reach the same digest again);
//! - at most one leader per term;
//! - no acknowledged write is lost after a crash: a write missing from the final committed log
//!   is reported as lost to the crash that followed its acknowledgement, when there was one.
//!
//! Effects match on (kind, path, data): the runner must describe a committed transaction's
//! changes as the workloads describe theirs (`create` with the node's data, `set` with the
//! new data, `delete` with no data; the sub-ops of a multi one by one).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{CheckResult, Violation};
use crate::history::{Effect, History};

/// What the runner saw inside the cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WhiteBox {
    /// Per node, every entry it applied.
    pub applied: Vec<NodeApplied>,
    /// Every (term, leader) observation, from any node's point of view.
    pub leaders: Vec<LeaderSeen>,
    /// The committed log at the end of the run (after heal, from a node that applied it all),
    /// in index order.
    pub committed: Vec<CommittedEntry>,
    /// The crashes of the run (kill, kill the leader, a lost unsynced tail).
    pub crashes: Vec<Crash>,
}

/// The entries one node applied, in the order it applied them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NodeApplied {
    pub node: usize,
    /// (log index, the node's digest after applying it).
    pub digests: Vec<(u64, u64)>,
}

/// A node that was leader of a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderSeen {
    pub term: u64,
    pub node: usize,
    /// When it was seen, ns since the run started.
    pub at_ns: u64,
}

/// One entry of the committed log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedEntry {
    pub index: u64,
    pub term: u64,
    /// The changes its transaction made (none for a session or no-op entry).
    pub effects: Vec<Effect>,
}

/// A node crashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crash {
    pub node: usize,
    pub at_ns: u64,
}

/// Diverging indexes listed before the rest are only counted.
const LISTED: usize = 10;

/// Runs every white-box check.
pub fn check(history: &History, wb: &WhiteBox) -> Vec<CheckResult> {
    vec![log_once(history, wb), digests(wb), leaders(wb)]
}

/// Every acknowledged write in the committed log exactly once.
pub fn log_once(history: &History, wb: &WhiteBox) -> CheckResult {
    let mut at: HashMap<&Effect, Vec<u64>> = HashMap::new();
    for e in &wb.committed {
        for eff in &e.effects {
            at.entry(eff).or_default().push(e.index);
        }
    }
    let (mut violations, mut lost, mut twice, mut checked) = (Vec::new(), 0, 0, 0);
    for o in history.ops.iter().filter(|o| o.ok()) {
        for eff in &o.effects {
            checked += 1;
            let what = format!("{} {}", eff.kind, eff.path);
            match at.get(eff).map_or(&[][..], |v| v.as_slice()) {
                [_] => {}
                [] => {
                    lost += 1;
                    let crash = wb.crashes.iter().filter(|c| c.at_ns > o.complete_ns).min_by_key(|c| c.at_ns);
                    let why = crash.map_or(String::new(), |c| {
                        format!(": lost after the crash of node {} at {:.1} ms", c.node + 1, c.at_ns as f64 / 1e6)
                    });
                    let msg = format!("op {} was acknowledged but its {what} is not in the committed log{why}", o.id);
                    violations.push(Violation::over(history, msg, vec![o.id], Some(eff.path.clone())));
                }
                many => {
                    twice += 1;
                    let msg =
                        format!("op {}'s {what} is in the committed log {} times (indexes {many:?})", o.id, many.len());
                    violations.push(Violation::over(history, msg, vec![o.id], Some(eff.path.clone())));
                }
            }
        }
    }
    let summary = format!(
        "{checked} acknowledged changes against {} committed entries; {lost} missing, {twice} committed twice",
        wb.committed.len()
    );
    CheckResult::from_violations("committed-once", summary, violations)
}

/// Every node's digest equal at every index more than one applied (or one applied twice).
pub fn digests(wb: &WhiteBox) -> CheckResult {
    // Per index: the first (node, digest) seen.
    let mut first: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
    let mut diverged: BTreeMap<u64, String> = BTreeMap::new();
    let mut shared = 0usize;
    for n in &wb.applied {
        for &(index, digest) in &n.digests {
            match first.get(&index) {
                None => {
                    first.insert(index, (n.node, digest));
                }
                Some(&(other, d)) => {
                    shared += 1;
                    if d != digest && !diverged.contains_key(&index) {
                        let who = if other == n.node {
                            "again after a restart".to_string()
                        } else {
                            format!("node {}", n.node + 1)
                        };
                        diverged.insert(
                            index,
                            format!(
                                "replicas diverge at log index {index}: node {} has digest {d:#x}, {who} {digest:#x}",
                                other + 1
                            ),
                        );
                    }
                }
            }
        }
    }
    let count = diverged.len();
    let mut violations: Vec<Violation> =
        diverged.into_values().take(LISTED).map(|m| Violation::bare(m, 0, Some("digest".into()))).collect();
    // `shared`: (index, node) pairs beyond the first node to apply an index, that is, the
    // comparisons made. Every replica applies every index, so this is the check's coverage,
    // not an anomaly; the wording says so.
    let summary = format!(
        "{} indexes applied; {shared} cross-node digest comparisons at a shared index; {count} diverge",
        first.len()
    );
    let mut r = CheckResult::from_violations("replica-digests", summary, std::mem::take(&mut violations));
    r.violation_count = count;
    r
}

/// At most one leader per term.
pub fn leaders(wb: &WhiteBox) -> CheckResult {
    let mut by_term: BTreeMap<u64, Vec<LeaderSeen>> = BTreeMap::new();
    for l in &wb.leaders {
        let seen = by_term.entry(l.term).or_default();
        if !seen.iter().any(|s| s.node == l.node) {
            seen.push(*l);
        }
    }
    let violations: Vec<Violation> = (by_term.iter())
        .filter(|(_, s)| s.len() > 1)
        .map(|(term, s)| {
            let nodes: Vec<String> =
                s.iter().map(|l| format!("node {} (at {:.1} ms)", l.node + 1, l.at_ns as f64 / 1e6)).collect();
            let at = s.iter().map(|l| l.at_ns).max().unwrap_or(0);
            let mut v = Violation::bare(format!("term {term} had {} leaders: {}", s.len(), nodes.join(", ")), at, None);
            v.start_ns = s.iter().map(|l| l.at_ns).min().unwrap_or(0);
            v
        })
        .collect();
    let summary = format!("{} leader observations over {} terms", wb.leaders.len(), by_term.len());
    CheckResult::from_violations("one-leader-per-term", summary, violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::history::{Call, Outcome, Ret};
    use crate::testutil::Hist;

    fn set(path: &str, data: &str) -> Effect {
        Effect { kind: "set".into(), path: path.into(), data: Some(data.as_bytes().to_vec()) }
    }

    fn entry(index: u64, effects: Vec<Effect>) -> CommittedEntry {
        CommittedEntry { index, term: 1, effects }
    }

    /// Two acknowledged writes and an unknown one (whose change may be anywhere, or nowhere).
    fn history() -> History {
        let mut b = Hist::default();
        b.write(0, "k", 1, 1, 0, 1);
        b.last().effects = vec![set("/k", "1")];
        b.write(1, "k", 2, 2, 2, 3);
        b.last().effects = vec![set("/k", "2")];
        b.op(2, "k", Call::Write { value: 3 }, Outcome::Unknown, Ret::None, 2, 9);
        b.h
    }

    #[test]
    fn each_acknowledged_change_once_passes_missing_or_twice_fails() {
        let h = history();
        let mut wb = WhiteBox {
            committed: vec![entry(1, vec![]), entry(2, vec![set("/k", "1")]), entry(3, vec![set("/k", "2")])],
            ..WhiteBox::default()
        };
        assert_eq!(log_once(&h, &wb).verdict, Verdict::Pass);
        wb.committed.push(entry(4, vec![set("/k", "3"), set("/k", "1")]));
        let r = log_once(&h, &wb);
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.violations[0].message.contains("2 times (indexes [2, 4])"), "{r:?}");
        wb.committed.retain(|e| e.index != 3 && e.index != 4);
        wb.crashes.push(Crash { node: 1, at_ns: 5_000_000 });
        let r = log_once(&h, &wb);
        assert_eq!(r.violations[0].ops, vec![1]);
        assert!(r.violations[0].message.contains("lost after the crash of node 2 at 5.0 ms"), "{r:?}");
    }

    #[test]
    fn digests_that_differ_at_one_index_fail_equal_ones_pass() {
        let mut wb = WhiteBox {
            applied: vec![
                NodeApplied { node: 0, digests: vec![(1, 10), (2, 20), (3, 30)] },
                NodeApplied { node: 1, digests: vec![(1, 10), (2, 20)] },
                // Restarted and replayed from index 2: the same digests again.
                NodeApplied { node: 2, digests: vec![(1, 10), (2, 20), (2, 20), (3, 30)] },
            ],
            ..WhiteBox::default()
        };
        assert_eq!(digests(&wb).verdict, Verdict::Pass);
        wb.applied[2].digests.push((3, 31));
        let r = digests(&wb);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].message, "replicas diverge at log index 3: node 1 has digest 0x1e, node 3 0x1f");
        wb.applied[0].digests.push((1, 11));
        let r = digests(&wb);
        assert_eq!(r.violation_count, 2);
        assert!(r.violations[0].message.contains("node 1 has digest 0xa, again after a restart 0xb"), "{r:?}");
    }

    #[test]
    fn two_leaders_in_one_term_fail() {
        let seen = |term, node, ms: u64| LeaderSeen { term, node, at_ns: ms * 1_000_000 };
        let mut wb = WhiteBox { leaders: vec![seen(1, 0, 1), seen(1, 0, 5), seen(2, 1, 9)], ..WhiteBox::default() };
        assert_eq!(leaders(&wb).verdict, Verdict::Pass);
        wb.leaders.push(seen(2, 2, 12));
        let r = leaders(&wb);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].message, "term 2 had 2 leaders: node 2 (at 9.0 ms), node 3 (at 12.0 ms)");
        assert_eq!((r.violations[0].start_ns, r.violations[0].end_ns), (9_000_000, 12_000_000));
    }
}
