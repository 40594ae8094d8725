//! The engine half of the deliberately broken `forget-acked-on-leader-change` mode (see
//! `crate::broken` and `cluster/broken.rs`): a waiter answered before its entry commits.

use testkeeper_core::apply::Outcome;
use testkeeper_core::txn::Entry;

use super::Engine;

impl Engine {
    /// Answers whoever waits for `entry` with `outcome` now; the commit (if it ever comes)
    /// then finds nobody waiting, and a lost entry is never refused.
    pub(crate) fn answer_early(&mut self, entry: &Entry, outcome: &Outcome) {
        if let Some(w) = self.waiters.take(entry.origin()) {
            self.answer(w, entry, outcome);
        }
    }
}
