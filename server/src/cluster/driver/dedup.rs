//! Forwarded proposals seen, so that one delivered twice is proposed once. A network (or a
//! transport that resends after a reconnect) may hand the leader the same `Forward` again;
//! raft-rs's own messages are idempotent, ours was not: the copy became a second entry, and an
//! acknowledged write was committed twice (`testkeeper sim --nemesis lossy-links --seed 0`).
//! Origins are unique per proposal (node, incarnation, counter), so an origin seen is a copy.

use std::collections::{HashSet, VecDeque};

/// Origins remembered: far more than can be in flight at once (a proposal waits at most the
/// operation timeout), so a copy delayed that long is still recognised.
const REMEMBERED: usize = 1 << 16;

/// The last [`REMEMBERED`] origins this node proposed as the leader.
#[derive(Debug, Default)]
pub(super) struct Seen {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Seen {
    /// Records `origin`; false if it was already seen (a copy, to drop).
    pub fn first_time(&mut self, origin: u64) -> bool {
        if !self.set.insert(origin) {
            return false;
        }
        self.order.push_back(origin);
        if self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_refused_and_old_origins_are_forgotten() {
        let mut s = Seen::default();
        assert!(s.first_time(7));
        assert!(!s.first_time(7));
        for o in 100..100 + REMEMBERED as u64 {
            assert!(s.first_time(o));
        }
        assert!(s.first_time(7), "forgotten after REMEMBERED newer ones");
        assert_eq!(s.order.len(), REMEMBERED);
    }
}
