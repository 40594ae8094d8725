//! A recorder of what every node of a cluster did, for white-box checkers (`testkeeper
//! chaos`): each entry a node applied (with the digest after it), each role it took in each
//! term, and each time its state was loaded whole (a start from its disk, a snapshot from the
//! leader). One tap is shared by every node of a cluster through `ServerConfig::tap`; a
//! server without one records nothing and pays one `Option` check per entry.

use std::sync::{Arc, Mutex, MutexGuard};

// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use testkeeper_core::txn::Entry;

use super::{NodeId, Role};

/// An entry one node applied.
#[derive(Debug, Clone)]
pub struct AppliedRecord {
    pub node: NodeId,
    pub at: Instant,
    pub entry: Entry,
    /// The tree digest after the entry, on this node.
    pub digest: u64,
}

/// A role a node took (as its driver saw it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRecord {
    pub node: NodeId,
    pub at: Instant,
    pub role: Role,
    pub term: u64,
}

/// A node's state replaced whole: at start (from its disk, or empty) or by a leader's snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadRecord {
    pub node: NodeId,
    pub at: Instant,
    /// The index the loaded state holds.
    pub index: u64,
    pub digest: u64,
    /// `"start"` or `"snapshot"`.
    pub how: &'static str,
}

/// Everything recorded, in the order it happened per node.
#[derive(Debug, Clone, Default)]
pub struct TapLog {
    pub applied: Vec<AppliedRecord>,
    pub roles: Vec<RoleRecord>,
    pub loads: Vec<LoadRecord>,
}

/// The shared recorder; clones record into the same log.
#[derive(Debug, Clone, Default)]
pub struct Tap {
    inner: Arc<Mutex<TapLog>>,
}

impl Tap {
    /// An empty recorder.
    pub fn new() -> Tap {
        Tap::default()
    }

    fn log(&self) -> MutexGuard<'_, TapLog> {
        // A panic while recording leaves a log that is still worth reading.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Node `node` applied `entry`; its digest is now `digest`.
    pub fn applied(&self, node: NodeId, entry: &Entry, digest: u64) {
        self.log().applied.push(AppliedRecord { node, at: Instant::now(), entry: entry.clone(), digest });
    }

    /// Node `node` took `role` in `term`.
    pub fn role(&self, node: NodeId, role: Role, term: u64) {
        self.log().roles.push(RoleRecord { node, at: Instant::now(), role, term });
    }

    /// Node `node`'s state was replaced by one at `index`.
    pub fn loaded(&self, node: NodeId, index: u64, digest: u64, how: &'static str) {
        self.log().loads.push(LoadRecord { node, at: Instant::now(), index, digest, how });
    }

    /// A copy of everything recorded so far.
    pub fn snapshot(&self) -> TapLog {
        self.log().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_log() {
        let t = Tap::new();
        let u = t.clone();
        u.role(2, Role::Leader, 3);
        t.loaded(1, 0, 7, "start");
        t.applied(1, &Entry::noop(1, 1), 7);
        let log = t.snapshot();
        assert_eq!(log.roles.len(), 1);
        assert_eq!((log.loads[0].node, log.loads[0].how), (1, "start"));
        assert_eq!(log.applied[0].entry.index(), 1);
    }
}
