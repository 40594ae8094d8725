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

impl Log for MemLog {
    fn append(&mut self, entries: &[Entry], hard: HardState) -> Result<(), LogError> {
        for e in entries {
            assert_eq!(e.index(), self.last + 1, "invariant: log appends are contiguous");
            self.last = e.index();
            self.last_term = e.term();
            if self.limit > 0 {
                if self.entries.len() == self.limit {
                    self.entries.pop_front();
                    self.first += 1;
                }
                self.entries.push_back(e.clone());
            } else {
                self.first = self.last + 1;
            }
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
