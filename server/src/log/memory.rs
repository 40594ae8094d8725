//! The in-memory log: entries kept in a bounded queue. An append is as durable as it will ever
//! be, so entries commit as soon as they are proposed. With a bound of 0 (standalone mode's
//! default) nothing is kept but the indexes: the tree is the only copy, as before the log
//! existed, and in-memory mode costs nothing for it.

use std::collections::VecDeque;
use std::sync::Arc;

use testkeeper_core::txn::Entry;

use super::{HardState, Log, LogError, Span, Syncer};

/// Entries in memory, at most `limit` of them (older ones are compacted away).
#[derive(Debug)]
pub struct MemLog {
    entries: VecDeque<Entry>,
    limit: usize,
    /// Index of the first entry held (or that would be held).
    first: u64,
    last: u64,
    last_term: u64,
    hard: HardState,
}

impl MemLog {
    /// An empty log whose next entry is `after + 1`, keeping at most `limit` entries.
    pub fn new(limit: usize, after: u64) -> MemLog {
        MemLog {
            entries: VecDeque::new(),
            limit,
            first: after + 1,
            last: after,
            last_term: 0,
            hard: HardState::default(),
        }
    }
}

impl MemLog {
    /// Entry `index` of `term` follows; `keep` is the copy to hold (none when nothing is kept).
    fn push(&mut self, index: u64, term: u64, keep: Option<Entry>) {
        assert_eq!(index, self.last + 1, "invariant: log appends are contiguous");
        self.last = index;
        self.last_term = term;
        match keep {
            Some(e) if self.limit > 0 => {
                if self.entries.len() == self.limit {
                    self.entries.pop_front();
                    self.first += 1;
                }
                self.entries.push_back(e);
            }
            _ => self.first = self.last + 1,
        }
    }
}

impl Log for MemLog {
    fn append(&mut self, entries: &[Entry], hard: HardState) -> Result<(), LogError> {
        for e in entries {
            // Bounded at 0 nothing is kept, and nothing copied.
            self.push(e.index(), e.term(), (self.limit > 0).then(|| e.clone()));
        }
        self.hard = hard;
        Ok(())
    }

    fn append_owned(&mut self, entries: Vec<Entry>, hard: HardState) -> Result<(), LogError> {
        for e in entries {
            self.push(e.index(), e.term(), Some(e));
        }
        self.hard = hard;
        Ok(())
    }

    fn entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, LogError> {
        if from < self.first || to > self.last + 1 || from > to {
            return Err(LogError::Unavailable { index: from, first: self.first, last: self.last });
        }
        let skip = (from - self.first) as usize;
        Ok(self.entries.iter().skip(skip).take((to - from) as usize).cloned().collect())
    }

    fn truncate_from(&mut self, index: u64) -> Result<(), LogError> {
        while self.last >= index && self.last >= self.first {
            self.entries.pop_back();
            self.last -= 1;
        }
        self.last_term = self.entries.back().map_or(self.last_term, Entry::term);
        Ok(())
    }

    fn compact_to(&mut self, index: u64) -> Result<(), LogError> {
        while self.first < index && self.first <= self.last {
            self.entries.pop_front();
            self.first += 1;
        }
        Ok(())
    }

    fn reset_to(&mut self, index: u64, term: u64) -> Result<(), LogError> {
        self.entries.clear();
        (self.first, self.last, self.last_term) = (index + 1, index, term);
        Ok(())
    }

    fn span(&self) -> Span {
        Span { first: self.first, last: self.last, last_term: self.last_term, hard: self.hard }
    }

    fn persistent(&self) -> bool {
        false
    }

    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        None
    }

    fn stored_before_sending(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noops(from: u64, to: u64) -> Vec<Entry> {
        (from..to).map(|i| Entry::noop(i, 1)).collect()
    }

    fn held(log: &MemLog) -> Vec<u64> {
        log.entries(log.first_index(), log.last_index() + 1).expect("held").iter().map(Entry::index).collect()
    }

    #[test]
    fn owned_and_borrowed_appends_keep_the_same_bounded_log() {
        let hard = HardState { term: 1, vote: 2, commit: 3 };
        let (mut a, mut b) = (MemLog::new(5, 0), MemLog::new(5, 0));
        a.append(&noops(1, 4), hard).expect("append");
        a.append(&noops(4, 9), hard).expect("append");
        b.append_owned(noops(1, 4), hard).expect("append");
        b.append_owned(noops(4, 9), hard).expect("append");
        for log in [&a, &b] {
            assert_eq!(held(log), vec![4, 5, 6, 7, 8]);
            assert_eq!(log.span().hard, hard);
        }
    }

    #[test]
    fn a_log_bounded_at_zero_keeps_only_the_indexes() {
        let mut log = MemLog::new(0, 10);
        log.append(&noops(11, 13), HardState::default()).expect("append");
        log.append_owned(noops(13, 15), HardState::default()).expect("append");
        assert_eq!((log.first_index(), log.last_index()), (15, 14));
        assert!(log.entries(15, 15).expect("empty range").is_empty());
    }
}
