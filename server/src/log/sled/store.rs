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
    /// Declared after `db`, so it drops after it: waits for sled to let go of the directory.
    pub(super) _released: Released,
}

/// Waits, when dropped, until sled's lock on its directory is free again. Dropping the last
/// `sled::Db` handle does not release it at once: write-backs sled handed to its own thread
/// pool still hold the files for a moment. A server stopped and opened again in the same
/// process (the embedding API's `restart`, `resume`, `reset`) then found the directory locked
/// (`WouldBlock`), more often on a loaded machine; with this, a closed log has let go of it.
pub(super) struct Released {
    /// sled's lock file (`<dir>/db`, locked with `flock`).
    pub(super) lock_file: std::path::PathBuf,
}

/// How many times a closing log tries sled's lock, 1 ms apart, before it gives up (and says
/// so): about 10 s. Counted, not timed: no clock is read for it.
const RELEASE_TRIES: u32 = 10_000;

impl Drop for Released {
    fn drop(&mut self) {
        let Ok(file) = std::fs::File::open(&self.lock_file) else { return };
        // Taking the lock ourselves is the only way to learn it is free (it is released at
        // once when `file` closes).
        for _ in 0..RELEASE_TRIES {
            if !matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        tracing::warn!(file = %self.lock_file.display(), "sled still holds its lock after the log closed");
    }
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
        // One key needs no batch: sled writes a batch's manifest as a buffer of its own, which
        // is a second write and `sync_file_range` in the flush that follows.
        if hard.is_none() && staged.chunks.len() == 1 {
            let (first, bytes) = staged.chunks.into_iter().next().expect("one chunk");
            return self.db.insert(&key(first)[..], bytes).map(drop).map_err(|e| io("appending to the log", e));
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

#[cfg(test)]
mod tests {
    use super::super::SledLog;
    use crate::log::{HardState, Log};
    use testkeeper_core::txn::Entry;

    /// A closed log has let go of its directory: it opens again at once, every time, with
    /// what was flushed in it (sled's pool threads held the lock a moment after the close).
    #[test]
    fn a_closed_log_opens_again_at_once() {
        let dir = tempfile::tempdir().unwrap();
        for round in 1..=100u64 {
            let mut log = SledLog::open(dir.path(), true).unwrap_or_else(|e| panic!("round {round}: {e}")).log;
            assert_eq!(log.last_index(), round - 1, "round {round}");
            log.append(&[Entry::noop(round, 1)], HardState { term: 1, vote: 0, commit: round }).unwrap();
            log.syncer().expect("write-behind has a syncer").sync().unwrap();
        }
    }

    /// The hard state reaches the disk with the entries when its term or vote changes; a
    /// commit index that moved alone may lag there (it is written with the next change), and
    /// the log opens with every flushed entry either way.
    #[test]
    fn the_hard_state_goes_to_disk_when_its_term_or_vote_changes() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut log = SledLog::open(dir.path(), true).unwrap().log;
            let steps = [(1, 0, 0), (1, 0, 1), (2, 3, 2), (2, 3, 3)];
            for (i, (term, vote, commit)) in steps.into_iter().enumerate() {
                let index = i as u64 + 1;
                log.append(&[Entry::noop(index, term)], HardState { term, vote, commit }).unwrap();
                log.syncer().expect("write-behind has a syncer").sync().unwrap();
                assert_eq!(log.hard_state().commit, commit, "in memory the hard state is the newest");
            }
        }
        let log = SledLog::open(dir.path(), true).unwrap().log;
        assert_eq!(log.last_index(), 4);
        let hard = log.hard_state();
        assert_eq!((hard.term, hard.vote, hard.commit), (2, 3, 2), "written with the change of term and vote");
    }

    /// A log that does not verify is refused, and has let go of its directory by then: a
    /// caller that repairs it (or looks again) opens it at once, never into sled's lock.
    #[test]
    fn a_refused_log_lets_go_of_its_directory_at_once() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut log = SledLog::open(dir.path(), true).unwrap().log;
            for i in 1..=3u64 {
                log.append(&[Entry::noop(i, 1)], HardState { term: 1, vote: 0, commit: i }).unwrap();
                log.syncer().expect("write-behind has a syncer").sync().unwrap();
            }
        }
        {
            // A flipped byte in the middle record: not the last, so not a torn tail.
            let db = sled::open(dir.path()).unwrap();
            let (k, v) = db.scan_prefix(b"e").nth(1).unwrap().unwrap();
            let mut v = v.to_vec();
            let at = v.len() / 2;
            v[at] ^= 0x40;
            db.insert(k, v).unwrap();
            db.flush().unwrap();
            drop(db);
            // sled's own handle has no release wait: wait for its lock here.
            drop(super::Released { lock_file: dir.path().join("db") });
        }
        for round in 1..=100 {
            match SledLog::open(dir.path(), true) {
                Err(crate::log::LogError::Corrupt { index: 2, .. }) => {}
                Err(e) => panic!("round {round}: {e}"),
                Ok(_) => panic!("round {round}: a corrupt log opened"),
            }
        }
    }
}
