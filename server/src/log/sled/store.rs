//! What a sled log and its syncer share: the records appended but not yet in sled, the hard
//! state to write with them, and the lock that moves them in; and the syncer, which moves
//! them and flushes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::super::chunk::Staged;
use super::super::{HardState, LogError, Syncer};
use super::values::{hard_bytes, io, key, HARD};

/// What the log (under the engine's lock) and the syncer thread share.
pub(super) struct Store {
    pub(super) db: sled::Db,
    /// Appended, not yet in sled, with the hard state of the last append.
    pub(super) staged: Mutex<(Staged, Option<HardState>)>,
    /// Held while staged records move into sled, so batches land in index order and a
    /// truncation or reset never interleaves with one. Taken before `staged`, never after.
    pub(super) writing: Mutex<()>,
    /// The last index appended (staged or in sled).
    pub(super) appended: AtomicU64,
}

impl Store {
    pub(super) fn writing(&self) -> MutexGuard<'_, ()> {
        self.writing.lock().expect("log write lock")
    }

    /// Moves everything staged into sled in one batch (not flushed). The caller holds `writing`.
    pub(super) fn write_staged(&self, _writing: &MutexGuard<'_, ()>) -> Result<(), LogError> {
        let (staged, hard) = std::mem::take(&mut *self.staged.lock().expect("staged records"));
        if staged.is_empty() && hard.is_none() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for (first, bytes) in staged.chunks {
            batch.insert(&key(first)[..], bytes);
        }
        if let Some(h) = hard {
            batch.insert(HARD, hard_bytes(h));
        }
        self.db.apply_batch(batch).map_err(|e| io("appending to the log", e))
    }

    /// Drops what is staged (a reset replaces the whole log). The caller holds `writing`.
    pub(super) fn discard_staged(&self, _writing: &MutexGuard<'_, ()>) {
        *self.staged.lock().expect("staged records") = (Staged::default(), None);
    }
}

/// Writes what is staged and flushes, from the syncer thread (or the Raft driver).
pub(super) struct SledSyncer {
    pub(super) store: Arc<Store>,
}

impl Syncer for SledSyncer {
    fn sync(&self) -> Result<u64, LogError> {
        // Appends stage under the engine's lock, and truncations (a Raft follower's) run on
        // the thread that calls this, so the index read with the staged records moved is
        // exactly what the flush below covers.
        let target = {
            let w = self.store.writing();
            let target = self.store.appended.load(Ordering::Acquire);
            self.store.write_staged(&w)?;
            target
        };
        self.store.db.flush().map_err(|e| io("flushing the log", e))?;
        Ok(target)
    }
}
