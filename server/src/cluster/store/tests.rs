//! The store's tests: the tail cache against the log, and size-bounded reads.
use raft::Storage as _;

use super::*;
use crate::log::memory::MemLog;

fn raft_noops(from: u64, to: u64, term: u64) -> Vec<RaftEntry> {
    (from..to).map(|i| to_raft(&Entry::noop(i, term))).collect()
}

fn read(s: &RaftStore, low: u64, high: u64) -> Vec<(u64, u64)> {
    let ctx = GetEntriesContext::empty(false);
    s.entries(low, high, None, ctx).expect("held").iter().map(|e| (e.index, e.term)).collect()
}

/// What the log itself holds, converted as the store did before it kept a tail.
fn from_log(s: &RaftStore, low: u64, high: u64) -> Vec<(u64, u64)> {
    s.our_entries(low, high).expect("held").iter().map(to_raft).map(|e| (e.index, e.term)).collect()
}

#[test]
fn the_tail_answers_as_the_log_through_conflicts_compaction_and_a_snapshot() {
    let mut s = RaftStore::new(Box::new(MemLog::new(usize::MAX, 0)), vec![1, 2, 3], None).expect("store");
    s.append(&raft_noops(1, 11, 1), None).expect("append");
    assert_eq!(s.tail.first(), Some(1));
    assert_eq!(read(&s, 3, 11), from_log(&s, 3, 11));
    // A new leader's entries replace the suffix from 6 on.
    s.append(&raft_noops(6, 9, 2), None).expect("append");
    assert_eq!(s.last(), 8);
    assert_eq!(read(&s, 1, 9), from_log(&s, 1, 9));
    assert_eq!(read(&s, 5, 9), vec![(5, 1), (6, 2), (7, 2), (8, 2)]);
    let snap = SnapRef { index: 4, term: 1, body: Arc::new(Vec::new()) };
    s.snapshot_taken(snap, 4).expect("compact");
    assert_eq!(s.tail.first(), Some(4));
    assert_eq!(read(&s, 4, 9), from_log(&s, 4, 9));
    // A leader's snapshot: the log restarts after it, and so does the tail.
    s.install(SnapRef { index: 20, term: 3, body: Arc::new(Vec::new()) }).expect("install");
    assert_eq!(s.tail.first(), None);
    s.append(&raft_noops(21, 24, 3), None).expect("append");
    assert_eq!(read(&s, 21, 24), from_log(&s, 21, 24));
}

#[test]
fn the_tail_keeps_only_the_newest_entries_and_older_ones_come_from_the_log() {
    let mut s = RaftStore::new(Box::new(MemLog::new(usize::MAX, 0)), vec![1, 2, 3], None).expect("store");
    let n = TAIL as u64 + 100;
    for from in (1..=n).step_by(50) {
        s.append(&raft_noops(from, (from + 50).min(n + 1), 1), None).expect("append");
    }
    assert_eq!(s.tail.entries.len(), TAIL);
    assert_eq!(s.tail.first(), Some(n + 1 - TAIL as u64));
    assert!(s.tail.get(1, 10, &mut Budget::new(None)).is_none());
    assert_eq!(read(&s, 1, 10), from_log(&s, 1, 10));
    assert_eq!(read(&s, n - 5, n + 1), from_log(&s, n - 5, n + 1));
}

/// A size-bounded read stops at the bound, from the tail and from the log alike, as raft-rs's
/// `limit_size` would cut it (the first entry always comes).
#[test]
fn a_bounded_read_stops_at_its_size_from_the_tail_and_from_the_log() {
    let mut s = RaftStore::new(Box::new(MemLog::new(usize::MAX, 0)), vec![1, 2, 3], None).expect("store");
    let n = TAIL as u64 * 3;
    for from in (1..=n).step_by(100) {
        s.append(&raft_noops(from, (from + 100).min(n + 1), 1), None).expect("append");
    }
    let ctx = || GetEntriesContext::empty(false);
    let one = u64::from(to_raft(&Entry::noop(1, 1)).compute_size());
    for low in [1, n - 50] {
        let mut all = s.entries(low, n + 1, None, ctx()).expect("held");
        raft::util::limit_size(&mut all, Some(one * 10));
        let bounded = s.entries(low, n + 1, one * 10, ctx()).expect("held");
        // Later indexes take more bytes, so fewer than 10 of them fit.
        assert!((2..=10).contains(&bounded.len()), "from {low}: {}", bounded.len());
        assert_eq!(bounded, all, "from {low}");
        assert_eq!(s.entries(low, n + 1, 0, ctx()).expect("held").len(), 1, "the first entry always comes");
    }
}
