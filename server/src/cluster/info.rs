//! What a node knows of its Raft log and, while it leads, of its followers. The driver owns
//! `RawNode`, so it publishes this on the board it shares with the engine after every `Ready`
//! (`cluster/board.rs`), and `mntr`, `lgif`, `/ready`, `/metrics` and `/api/v1/cluster` read
//! the copy.

use super::NodeId;
use crate::engine::Engine;

/// Keeper's default `stale_log_gap` (`CoordinationSettings.cpp`): a follower this many entries
/// or more behind the leader's last index is not synced.
pub const DEFAULT_STALE_LOG_GAP: u64 = 10_000;

/// A node's Raft log and followers, as last published by its driver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaftInfo {
    /// First index the log still holds (after compaction, the snapshot's index + 1).
    pub first_index: u64,
    pub last_index: u64,
    pub last_term: u64,
    /// The commit index this node knows.
    pub commit: u64,
    /// The leader's commit index as this node last heard it (on the leader, its own).
    pub leader_commit: u64,
    /// Index of the newest snapshot the log stands on (0: none).
    pub snapshot_index: u64,
    /// While this node leads: every other voter's progress; empty otherwise.
    pub followers: Vec<FollowerInfo>,
    /// Keeper's `stale_log_gap` this node runs with.
    pub stale_log_gap: u64,
    /// Every voter, this node included.
    pub members: Vec<NodeId>,
    /// Entries this follower applied on the proof that the leader held them too (so a
    /// majority of three did), before the leader's commit index said so (`driver/ahead.rs`).
    pub applied_on_stored: u64,
}

/// One follower's progress, as the leader tracks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerInfo {
    pub id: NodeId,
    /// The highest index known to be in its log.
    pub matched: u64,
    /// Heard from within the last election timeout (raft-rs's `recent_active`).
    pub active: bool,
    /// Receiving entries as they are proposed (raft-rs's Replicate state), not being probed
    /// or sent a snapshot.
    pub replicating: bool,
}

impl RaftInfo {
    /// Followers within `stale_log_gap` of this leader's last index, live or not, as Keeper
    /// counts them (`KeeperServer::getSyncedFollowerCount`).
    pub fn synced_by_gap(&self) -> usize {
        self.followers.iter().filter(|f| self.last_index <= f.matched + self.stale_log_gap).count()
    }

    /// Followers connected to this leader (ZooKeeper's learners).
    pub fn active(&self) -> usize {
        self.followers.iter().filter(|f| f.active).count()
    }

    /// Followers connected and replicating, as ZooKeeper's leader counts its forwarding
    /// followers (`Leader.getForwardingFollowers`: synced and still connected).
    pub fn synced_and_active(&self) -> usize {
        self.followers.iter().filter(|f| f.active && f.replicating).count()
    }
}

impl Engine {
    /// The Raft view of a cluster node (`None` standalone), as the driver last published it.
    /// Entries applied here are committed and in the log, so commit and last index are at
    /// least the applied index: no reader sees an applied index above the commit index
    /// while the driver's next picture is on its way.
    pub(crate) fn raft_info(&self) -> Option<RaftInfo> {
        let mut info = self.seq.replica()?.board.info();
        let applied = self.state.last_index();
        info.commit = info.commit.max(applied);
        info.last_index = info.last_index.max(applied);
        Some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: NodeId, matched: u64, active: bool, replicating: bool) -> FollowerInfo {
        FollowerInfo { id, matched, active, replicating }
    }

    #[test]
    fn synced_followers_per_server() {
        let info = RaftInfo {
            last_index: 20_010,
            stale_log_gap: 10_000,
            followers: vec![f(2, 20_010, true, true), f(3, 10_010, false, false), f(4, 10_009, true, false)],
            ..RaftInfo::default()
        };
        // Keeper: a dead follower still counts while it is within the gap.
        assert_eq!(info.synced_by_gap(), 2);
        // ZooKeeper: only connected followers that replicate.
        assert_eq!((info.active(), info.synced_and_active()), (2, 1));
    }
}
