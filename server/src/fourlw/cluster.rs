//! What the four-letter words say about a cluster node: its role (`mntr`'s
//! `zk_server_state`, `srvr`'s `Mode:`).
//!
//! Keeper calls every voter that does not lead a follower, a candidate included
//! (`KeeperServer::getPartiallyFilled4LWInfo`: `is_follower = !is_leader && !is_observer`).

use crate::cluster::Role;
use crate::engine::Engine;

/// `leader`, `follower`, or `standalone` for a server that is not part of a cluster.
pub(super) fn server_state(e: &Engine) -> &'static str {
    match e.replica.as_ref().map(|r| r.role) {
        None => "standalone",
        Some(Role::Leader) => "leader",
        Some(Role::Follower | Role::Candidate) => "follower",
    }
}
