//! What the four-letter words say about a cluster node: its role (`mntr`'s `zk_server_state`,
//! `srvr`'s `Mode:`), the leader's followers, `rqld`/`ydld`, and the
//! answer of a node that is not serving (no leader known, or stopped on a divergence).
//!
//! Keeper calls every voter that does not lead a follower, a candidate included
//! (`KeeperServer::getPartiallyFilled4LWInfo`: `is_follower = !is_leader && !is_observer`), and
//! only its leader prints `zk_followers` (every peer) and `zk_synced_followers` (peers within
//! `stale_log_gap` of its last index) (`FourLetterCommand.cpp`, `KeeperServer.cpp`). A
//! ZooKeeper 3.8 leader prints `zk_learners` (connected learners), `zk_synced_followers` (its
//! forwarding followers), `zk_synced_non_voting_followers`, `zk_synced_observers` and
//! `zk_pending_syncs` (`LeaderZooKeeperServer.registerMetrics`), and every quorum member
//! `zk_quorum_size`.

use std::fmt::Write as _;

use crate::cluster::Role;
use crate::core::flavor::Flavor;
use crate::engine::Engine;

/// Keeper's answer of a node that is not active (`FourLetterCommand.cpp`: SERVER_NOT_ACTIVE_MSG).
const KEEPER_NOT_ACTIVE: &str = "This instance is not currently serving requests";
/// ZooKeeper's (`FourLetterCommands.ZK_NOT_SERVING`, printed with a newline).
const ZK_NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests\n";

/// Words that check whether the server is active first: Keeper's `isServerActive()` words, and
/// ZooKeeper's `isZKServerRunning()` ones (the same list; ZooKeeper's `isro` answers "null").
const CHECKED: &[&str] =
    &["mntr", "srst", "conf", "cons", "crst", "srvr", "stat", "wchs", "wchc", "wchp", "dirs", "dump"];

/// `leader`, `follower`, or `standalone` for a server that is not part of a cluster.
pub fn server_state(e: &Engine) -> &'static str {
    match e.seq.replica().map(|r| r.role) {
        None => "standalone",
        Some(Role::Leader) => "leader",
        Some(Role::Follower | Role::Candidate) => "follower",
    }
}

/// `/ready` as Keeper's `KeeperReadinessHandler` decides it: (role, has a leader, ready), ready
/// for a leader or a follower that knows a leader; a node that stopped serving is not.
pub fn readiness(e: &Engine) -> (&'static str, bool, bool) {
    let role = server_state(e);
    let has_leader = e.has_leader() && e.stop_reason.is_none();
    // A follower catching up with its leader serves no read yet: not ready.
    let ready =
        e.stop_reason.is_none() && (role == "leader" || role == "standalone" || (has_leader && !e.catching_up()));
    (role, has_leader, ready)
}

/// The "not serving" answer to `word` on a cluster node without a leader (or stopped), if
/// that word checks.
pub(super) fn not_serving(e: &Engine, word: &str) -> Option<&'static str> {
    let r = e.seq.replica()?;
    let active = (r.role == Role::Leader || r.leader != 0) && e.stop_reason.is_none();
    if active || !CHECKED.contains(&word) {
        return None;
    }
    Some(match e.cfg.flavor {
        Flavor::Keeper => KEEPER_NOT_ACTIVE,
        Flavor::Zookeeper => ZK_NOT_SERVING,
    })
}

/// The cluster lines of `mntr`: the leader's followers, and in zookeeper flavor every
/// quorum member's `zk_quorum_size` (ZooKeeper 3.8's order, measured on a 3-server ensemble).
pub(super) fn mntr_lines(e: &Engine, out: &mut String) {
    let (Some(r), Some(raft)) = (e.seq.replica(), e.raft_info()) else { return };
    let mut kv = |k: &str, v: usize| {
        let _ = writeln!(out, "zk_{k}\t{v}");
    };
    let leads = r.role == Role::Leader;
    match e.cfg.flavor {
        Flavor::Keeper if leads => {
            kv("followers", raft.followers.len());
            kv("synced_followers", raft.synced_by_gap());
        }
        Flavor::Keeper => {}
        Flavor::Zookeeper => {
            if leads {
                kv("synced_followers", raft.synced_and_active());
                kv("synced_non_voting_followers", 0);
                kv("synced_observers", 0);
                // A follower's sync is answered with the leader's last index at once.
                kv("pending_syncs", 0);
                kv("learners", raft.active());
            }
            kv("quorum_size", raft.members.len());
        }
    }
}

/// Asks for the leadership of this node (`rqld`, `KeeperServer::requestLeader`: true on the
/// leader, or when a leader is known to send the request to). Returns whether it was sent.
pub fn request_leader(e: &Engine) -> bool {
    match e.seq.replica() {
        None => true,
        Some(r) if r.role == Role::Leader => true,
        Some(r) if r.leader != 0 && e.stop_reason.is_none() => {
            r.link.transfer_leader(r.link.node);
            true
        }
        Some(_) => false,
    }
}

/// Asks the leader to hand its leadership to its most up-to-date follower (`ydld`: only the
/// leader acts on it, and Keeper answers the same either way).
pub fn yield_leadership(e: &Engine) {
    if let Some(r) = e.seq.replica().filter(|r| r.role == Role::Leader) {
        r.link.transfer_leader(0);
    }
}
