//! A follower whose leader's process is gone (the transport saw its connection end and its
//! address refuse connections: `net/tcp/gone.rs`) does not wait out an election timeout of
//! silence, as ZooKeeper's followers do not: they see the leader's socket close and start
//! their election at once.
//!
//! raft-rs's `check_quorum` makes a follower ignore vote requests for an election timeout after
//! it last heard its leader (its lease), so that a node cut off from the others cannot unseat a
//! live leader. A leader whose process is gone holds no lease worth keeping: the follower
//! forgets its leader, and so hears votes at once. Then the first surviving member in id order
//! stands for election within two ticks (time for the others to hear of the death too and
//! leave their leases), and the others keep their own timeouts: two candidates at once would
//! split the vote and cost a whole timeout more. If the first's log is behind, its pre-vote is
//! refused and the most up-to-date follower's own timeout elects it, as before.
//!
//! Nothing here is unsafe if the news is wrong (a leader restarted at once): pre-vote fails
//! against a follower still in its lease, and the leader's next heartbeat makes this node its
//! follower again.

use raft::INVALID_ID;
use tracing::info;

use super::super::{NodeId, Role};
use super::Driver;

/// Ticks until the first survivor stands for election.
const CAMPAIGN_IN_TICKS: usize = 2;

impl Driver {
    /// The transport found `peer`'s process gone.
    pub(super) fn peer_gone(&mut self, peer: NodeId) {
        let r = &mut self.node.raft;
        if self.role != Role::Follower || r.leader_id != peer || peer == INVALID_ID {
            return;
        }
        r.leader_id = INVALID_ID;
        let first = self.peers.iter().copied().filter(|p| *p != peer).min() == Some(self.id);
        if first {
            let due = r.randomized_election_timeout().saturating_sub(CAMPAIGN_IN_TICKS);
            r.election_elapsed = r.election_elapsed.max(due);
        }
        info!(
            node = self.id,
            leader = peer,
            campaign_in_ticks = r.randomized_election_timeout().saturating_sub(r.election_elapsed),
            "the leader's process is gone: leaving its lease"
        );
    }
}
