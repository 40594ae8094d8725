//! What a node's driver and engine share without a message: the Raft picture the driver last
//! published (`mntr`, `lgif`, `/ready`, `/metrics` read it), the sessions active on this node
//! since the driver last reported them to the leader, and a snapshot the engine finished for
//! the driver to compact under; and whether the driver's disk guard finds the disk below its
//! margin (`mntr` says so even on a follower that no client writes to). Each is a small lock of its own, held for a copy or a swap and
//! never across other work: the driver never waits for the engine's lock, which a request
//! being served may hold (docs/architecture.md, "One commit stream").

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::info::RaftInfo;
use super::store::SnapRef;

/// The shared board of one node.
#[derive(Debug, Default)]
pub(crate) struct Board {
    info: Mutex<RaftInfo>,
    touched: Mutex<BTreeSet<i64>>,
    snapshot: Mutex<Option<(SnapRef, u64)>>,
    disk_low: AtomicBool,
}

/// A poisoned board lock only means a panic elsewhere while it was held for a copy: what it
/// holds is still whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Board {
    /// The driver's latest picture replaces the last.
    pub(crate) fn publish(&self, info: RaftInfo) {
        *lock(&self.info) = info;
    }

    /// The picture as last published.
    pub(crate) fn info(&self) -> RaftInfo {
        lock(&self.info).clone()
    }

    /// A session was active on this follower (the leader expires sessions from these reports).
    pub(crate) fn touch(&self, session: i64) {
        lock(&self.touched).insert(session);
    }

    /// Sessions active since the last call, in order (a simulation must replay).
    pub(crate) fn take_touched(&self) -> Vec<i64> {
        std::mem::take(&mut *lock(&self.touched)).into_iter().collect()
    }

    /// The engine finished a snapshot; entries below `keep_from` may be compacted.
    pub(crate) fn snapshot_taken(&self, snap: SnapRef, keep_from: u64) {
        *lock(&self.snapshot) = Some((snap, keep_from));
    }

    /// The driver's disk guard read `low` at its last tick.
    pub(crate) fn set_disk_low(&self, low: bool) {
        self.disk_low.store(low, Ordering::Relaxed);
    }

    /// Whether the driver last found the disk below its margin.
    pub(crate) fn disk_low(&self) -> bool {
        self.disk_low.load(Ordering::Relaxed)
    }

    /// The newest finished snapshot, once.
    pub(crate) fn take_snapshot(&self) -> Option<(SnapRef, u64)> {
        lock(&self.snapshot).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_sessions_are_taken_once_and_in_order() {
        let b = Board::default();
        for s in [3, 1, 3, 2] {
            b.touch(s);
        }
        assert_eq!(b.take_touched(), vec![1, 2, 3]);
        assert!(b.take_touched().is_empty());
    }

    #[test]
    fn a_snapshot_is_handed_over_once() {
        let b = Board::default();
        let snap = SnapRef { index: 7, term: 2, body: std::sync::Arc::new(vec![1]) };
        b.snapshot_taken(snap, 5);
        assert_eq!(b.take_snapshot().map(|(s, k)| (s.index, k)), Some((7, 5)));
        assert!(b.take_snapshot().is_none());
    }
}
