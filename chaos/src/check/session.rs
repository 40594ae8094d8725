//! ZooKeeper's session guarantees, per session (the "Consistency Guarantees" of the
//! ZooKeeper Programmer's Guide): a client sees the service in one order, so
//! - the zxids in the reply headers a session gets never go backwards (a write's reply
//!   carries its transaction's zxid, a read's the server's last applied one);
//! - a session sees its own writes, in order: after its write to a register returned version
//!   v, its later reads of that register (synced or not: `Call::ReadLocal` is only checked
//!   here) return version ≥ v, and its reads never go back to an older version either.
//!
//! The history events it reads: every op's `session` and `zxids` (non-positive zxids, which
//! some replies carry when they name no transaction, are ignored), and register ops (`Read`,
//! `ReadLocal`, `Write`, `Cas`) that ended ok with their `Ret::Value`/`Ret::Version`. A
//! session's ops are taken in invocation order; a read is checked only against what ended
//! before it began.
//!
//! Apache ZooKeeper keeps these across a reconnection to another server (it refuses a server
//! behind the client's last zxid); ClickHouse Keeper ignores the client's last zxid, so a
//! session that moves may see zxids go back there (see docs/flavors.md).

use std::collections::{BTreeMap, HashMap};

use super::{CheckResult, Violation};
use crate::history::{Call, History, Op, Ret};

/// Sessions whose violations are listed; the rest are counted.
const LISTED: usize = 20;

/// Checks every session of the history.
pub fn check(history: &History) -> CheckResult {
    let mut sessions: BTreeMap<i64, Vec<&Op>> = BTreeMap::new();
    for o in history.ops.iter().filter(|o| o.session > 0) {
        sessions.entry(o.session).or_default().push(o);
    }
    let (mut violations, mut bad, mut zxids) = (Vec::new(), 0usize, 0usize);
    for ops in sessions.values_mut() {
        ops.sort_by_key(|o| (o.invoke_ns, o.id));
        zxids += ops.iter().map(|o| o.zxids.iter().filter(|z| **z > 0).count()).sum::<usize>();
        let found: Vec<Violation> = [backwards(history, ops), own_writes(history, ops)].into_iter().flatten().collect();
        if !found.is_empty() {
            bad += 1;
            if bad <= LISTED {
                violations.extend(found);
            }
        }
    }
    let summary = format!("{} sessions, {zxids} reply zxids; {bad} sessions broke a guarantee", sessions.len());
    let mut r = CheckResult::from_violations("session", summary, violations);
    r.violation_count = r.violation_count.max(bad);
    r
}

/// The first reply zxid of the session below one it had already seen.
fn backwards(history: &History, ops: &[&Op]) -> Option<Violation> {
    let mut last: Option<(i64, &Op)> = None;
    for o in ops {
        for z in o.zxids.iter().copied().filter(|z| *z > 0) {
            if let Some((seen, by)) = last.filter(|(seen, _)| z < *seen) {
                let msg = format!(
                    "session {:#x} saw zxid {z:#x} in a reply to op {} after zxid {seen:#x} (op {}): zxids went backwards",
                    o.session, o.id, by.id
                );
                return Some(Violation::over(history, msg, vec![by.id, o.id], o.key.clone()));
            }
            last = Some((z, o));
        }
    }
    None
}

/// The first read of the session older than its own write, or than its own earlier read.
fn own_writes(history: &History, ops: &[&Op]) -> Option<Violation> {
    // Per key: the highest version this session knows of, and the op that showed it.
    let mut floor: HashMap<&str, (i32, &Op)> = HashMap::new();
    for o in ops {
        let (Some(key), true) = (o.key.as_deref(), o.ok()) else { continue };
        let version = match (&o.call, &o.ret) {
            (Call::Read | Call::ReadLocal, Ret::Value { version, .. }) => *version,
            (Call::Write { .. } | Call::Cas { .. }, Ret::Version { version }) => *version,
            _ => continue,
        };
        if matches!(o.call, Call::Read | Call::ReadLocal) {
            // Only what ended before this read began bounds it (a session's ops do not
            // overlap, unless a client pipelines; then the overlapping ones are not compared).
            let known = floor.get(key).copied().filter(|(_, by)| by.complete_ns < o.invoke_ns);
            if let Some((v, by)) = known.filter(|(v, _)| version < *v) {
                let what = if by.call.is_write() { "its own write" } else { "its own earlier read" };
                let msg = format!(
                    "session {:#x} read version {version} of {key} (op {}) after {what} (op {}) had shown version {v}: \
                     a session must see its own writes, in order",
                    o.session, o.id, by.id
                );
                return Some(Violation::over(history, msg, vec![by.id, o.id], Some(key.to_string())));
            }
        }
        if floor.get(key).is_none_or(|(v, _)| version > *v) {
            floor.insert(key, (version, o));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::history::Outcome;
    use crate::testutil::Hist;

    #[test]
    fn rising_zxids_and_reads_of_own_writes_pass() {
        let mut b = Hist::default();
        b.write(0, "k", 5, 3, 0, 1);
        b.last().zxids = vec![10];
        b.op(0, "k", Call::ReadLocal, Outcome::Ok, Ret::Value { value: 5, version: 3, mzxid: 10 }, 2, 3);
        b.last().zxids = vec![10, 0, 12];
        // Another session is on its own clock.
        b.read(1, "k", 0, 0, 2, 3);
        b.last().zxids = vec![4];
        b.read(0, "k", 9, 4, 4, 5);
        b.last().zxids = vec![13];
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    }

    #[test]
    fn a_zxid_that_goes_back_fails() {
        let mut b = Hist::default();
        let a = b.read(0, "k", 0, 0, 0, 1);
        b.last().zxids = vec![7, 9];
        let c = b.op(0, "", Call::ReadSet, Outcome::Ok, Ret::Elements { elements: vec![] }, 2, 3);
        b.last().zxids = vec![8];
        let r = check(&b.h);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.violations[0].ops, vec![a, c]);
        assert!(r.violations[0].message.contains("zxids went backwards"), "{r:?}");
    }

    #[test]
    fn a_session_that_misses_its_own_write_or_goes_back_fails() {
        let mut b = Hist::default();
        let w = b.write(0, "k", 5, 3, 0, 1);
        let stale = b.op(0, "k", Call::ReadLocal, Outcome::Ok, Ret::Value { value: 4, version: 2, mzxid: 0 }, 2, 3);
        let r = check(&b.h);
        assert_eq!(r.violations[0].ops, vec![w, stale], "{r:?}");
        assert!(r.violations[0].message.contains("its own write"));
        let mut b = Hist::default();
        let r1 = b.read(0, "k", 5, 3, 0, 1);
        let r2 = b.read(0, "k", 4, 2, 2, 3);
        let r = check(&b.h);
        assert_eq!(r.violations[0].ops, vec![r1, r2], "{r:?}");
        assert!(r.violations[0].message.contains("earlier read"));
    }
}
