//! Faults inside the nodes of a `TestKeeperCluster`, beyond kills, pauses and the network:
//! wall-clock steps, full and corrupted simulated disks, a wrong digest or a corrupted apply,
//! and the client-path fault rules of one node.

use std::io;

use super::TestKeeperCluster;
use crate::cluster::NodeId;
use crate::config::LogBackend;

/// Why a fault rule was not added to a node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    #[error("node {0} is not running")]
    NotRunning(NodeId),
    #[error(transparent)]
    Rule(#[from] crate::faults::RuleError),
}

impl TestKeeperCluster {
    /// Steps node `id`'s wall clock by `ms` (either way), as NTP or a resumed VM would, in a
    /// simulation (`testkeeper sim`); outside one the system clock is not touched. Its
    /// monotonic clock, which times sessions, goes on. Returns whether the clock could step
    /// (false outside a simulation, or for no such node).
    pub fn jump_clock(&self, id: NodeId, ms: i64) -> bool {
        self.slots.get(&id).is_some_and(|slot| slot.clock.jump(ms))
    }

    /// Fills node `id`'s simulated disk (`full`) down to the server's margin, or empties it:
    /// while full, the node's disk guard says so (a leader refuses writes and hands its
    /// leadership on, a follower takes no entries), and an append past the margin fails as
    /// ENOSPC does, stopping the node (docs/persistence.md). Returns whether the node has a
    /// simulated disk.
    pub fn fill_disk(&self, id: NodeId, full: bool) -> bool {
        match self.slots.get(&id).map(|s| &s.cfg.log_backend) {
            Some(LogBackend::Sim(disk)) => {
                disk.set_full(full);
                true
            }
            _ => false,
        }
    }

    /// Whether node `id` runs but has stopped serving (a failed disk, a digest mismatch).
    pub fn stopped(&self, id: NodeId) -> bool {
        self.node(id).is_some_and(|n| n.status().stopped.is_some())
    }

    /// Gives the link `from -> to` the default link's faults again (see
    /// [`set_default_link`](Self::set_default_link)).
    pub fn clear_link(&self, from: NodeId, to: NodeId) {
        self.net.clear_link(from, to);
    }

    /// Kills node `id`, flips a bit in a record of its simulated disk that is not the last one
    /// (chosen by `pick`), and starts it again: recovery must refuse the disk, naming the
    /// record. Returns the flipped offset (`None`: no simulated disk, or too few records to
    /// corrupt one in the middle; the node is restarted as it was) and how the start went.
    /// [`repair_disk`](Self::repair_disk) undoes the flip.
    ///
    /// # Errors
    /// Node `id` does not exist, or a restart of an uncorrupted disk failed.
    pub async fn corrupt_disk(&mut self, id: NodeId, pick: u64) -> io::Result<(Option<usize>, io::Result<()>)> {
        self.kill(id).await;
        let slot =
            self.slots.get(&id).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no node {id}")))?;
        let flipped = match &slot.cfg.log_backend {
            LogBackend::Sim(disk) => disk.corrupt(pick),
            _ => None,
        };
        if flipped.is_none() {
            self.restart(id).await?;
            return Ok((None, Ok(())));
        }
        Ok((flipped, self.restart(id).await))
    }

    /// Flips the bit at `offset` of node `id`'s simulated disk back (a corruption repaired, as
    /// from a backup) and starts the node.
    ///
    /// # Errors
    /// As [`restart`](Self::restart).
    pub async fn repair_disk(&mut self, id: NodeId, offset: usize) -> io::Result<()> {
        self.kill(id).await;
        if let Some(LogBackend::Sim(disk)) = self.slots.get(&id).map(|s| &s.cfg.log_backend) {
            disk.flip_byte(offset);
        }
        self.restart(id).await
    }

    /// Fault injection: node `id`, while it leads, writes a wrong digest into its next entry
    /// (ClickHouse's `keeper_leader_sets_invalid_digest`): every replica that applies it stops.
    pub fn invalid_digest_next(&self, id: NodeId) {
        if let Some(n) = self.node(id) {
            if let Some(r) = n.shared().engine().seq.replica_mut() {
                r.invalid_digest_next = true;
            }
        }
    }

    /// Fault injection: node `id` applies the next write entry to a corrupted copy of it, so
    /// its state diverges there; it must stop within that entry while the others go on.
    pub fn corrupt_next_apply(&self, id: NodeId) {
        if let Some(n) = self.node(id) {
            if let Some(r) = n.shared().engine().seq.replica_mut() {
                r.corrupt_next = true;
            }
        }
    }

    /// Adds a fault rule (`docs/faults.md`) to node `id`'s request path; returns its id.
    ///
    /// # Errors
    /// The rule does not parse, or node `id` is not running.
    pub fn add_fault(&self, id: NodeId, rule: &str) -> Result<u64, FaultError> {
        let n = self.node(id).ok_or(FaultError::NotRunning(id))?;
        Ok(n.shared().engine().faults.add(rule)?)
    }

    /// Removes every fault rule of node `id` (if it runs).
    pub fn clear_faults(&self, id: NodeId) {
        if let Some(n) = self.node(id) {
            n.shared().engine().faults.clear();
        }
    }
}
