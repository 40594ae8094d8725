//! What a test reads and drives on a [`TestKeeper`] without the network: the committed tree
//! and its digest, sessions and watches, the clock, periodic work, snapshots, session expiry.
//! Each takes the engine's lock for one short look; none hands the engine out.

use std::time::Duration;

use super::TestKeeper;
use crate::clock::Clock;
use crate::storage::Recovery;

impl TestKeeper {
    /// What the last start recovered from the data directory (`None` in memory).
    pub fn recovery(&self) -> Option<&Recovery> {
        self.recovery.as_ref()
    }

    /// Expires a session now, as if its timeout had passed: its end goes through the log.
    /// Returns whether it was live. In memory it has happened when this returns; with a data
    /// directory, once the log has flushed it (see [`settled`](Self::settled)).
    pub fn expire_session(&self, id: i64) -> bool {
        self.shared.engine().end_session(id)
    }

    /// Waits until every entry proposed so far has committed (at once in memory; after the
    /// flush that covers it with a data directory).
    pub async fn settled(&self) {
        while self.shared.engine().has_uncommitted() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Ids of the live sessions, ordered.
    pub fn sessions(&self) -> Vec<i64> {
        self.shared.engine().sessions.ids()
    }

    /// Whether `path` exists in the committed tree.
    pub fn exists(&self, path: &str) -> bool {
        self.shared.engine().state().tree().get(path).is_some()
    }

    /// The data of `path` in the committed tree, if it exists.
    pub fn data(&self, path: &str) -> Option<Vec<u8>> {
        self.shared.engine().state().tree().get(path).map(|n| n.data().to_vec())
    }

    /// The tree digest (Keeper V5 formula), as `mntr` reports it.
    pub fn digest(&self) -> u64 {
        self.shared.engine().state().digest()
    }

    /// The digest recomputed from every node (to check the incremental one).
    pub fn recompute_digest(&self) -> u64 {
        self.shared.engine().state().tree().recompute_digest()
    }

    /// Number of znodes, system nodes included.
    pub fn node_count(&self) -> usize {
        self.shared.engine().state().tree().len()
    }

    /// Index of the last committed log entry.
    pub fn last_index(&self) -> u64 {
        self.shared.engine().state().last_index()
    }

    /// Registered watches.
    pub fn watch_count(&self) -> usize {
        self.shared.engine().watches.count()
    }

    /// The server's clock (advance a manual clock to drive session expiry).
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Runs the periodic work (expiry, container/TTL collection) now.
    pub fn tick(&self) {
        self.shared.engine().tick();
    }

    /// Starts a snapshot now (as `csnp` does); returns its log index, or `None` in memory or
    /// while one is being written.
    pub fn snapshot(&self) -> Option<u64> {
        self.shared.engine().request_snapshot()
    }
}
