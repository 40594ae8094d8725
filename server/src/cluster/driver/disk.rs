//! A cluster node whose disk is below its margin (`--keep-free-space-bytes`,
//! `engine/disk.rs`) stays up instead of failing on ENOSPC. Read every tick:
//! - as the leader its engine refuses client writes with NOTREADONLY, as a standalone server
//!   does (`cluster/lead.rs`), and the driver hands its leadership once to the follower with
//!   the most of the log, so a cluster whose other disks have room goes on taking writes;
//! - as a follower it steps no entries (appends and snapshots from the leader are dropped, as if
//!   lost on the way; heartbeats are still answered, so it stands for no election) and serves
//!   no read, its tree falling behind;
//! - once there is room again, a follower closes the read gate anew (`driver/gate.rs`), catches
//!   up, and serves again.
//!
//! Session entries and the leader's own empty entries still go through: they are small, and
//! the margin is there for them.

use raft::eraftpb::MessageType;
use tracing::{info, warn};

use super::super::{Event, Role};
use super::Driver;
use crate::engine::DiskGuard;

impl Driver {
    /// Each tick: reads the driver's guard and acts on a change.
    pub(super) fn disk_on_tick(&mut self) {
        let low = self.disk.as_mut().is_some_and(DiskGuard::low);
        if low == self.disk_low {
            return;
        }
        self.disk_low = low;
        self.board.set_disk_low(low);
        if low {
            warn!(
                node = self.id,
                role = self.role.name(),
                "disk below its margin: refusing writes and entries until there is room"
            );
            self.handed_off = false;
            if self.role == Role::Follower {
                // Asks nobody while low: only room on the disk (then a new ask) opens it.
                let gate = self.close_gate(false);
                self.emit(Event::Gate(gate));
            }
        } else {
            info!(node = self.id, "disk has room again: taking entries and writes");
            if self.role == Role::Follower && self.leader != 0 {
                let gate = self.close_gate(false);
                self.emit(Event::Gate(gate));
            }
        }
    }

    /// After the tick's lock: a leader on a low disk hands its leadership on, once per episode.
    pub(super) fn disk_hand_off(&mut self) {
        if self.disk_low && self.role == Role::Leader && !self.handed_off && self.peers.len() > 1 {
            self.handed_off = true;
            self.transfer_leader(0);
        }
    }

    /// Whether a raft message is dropped for want of disk (entries a low follower cannot store).
    pub(super) fn dropped_for_disk(&self, t: MessageType) -> bool {
        self.disk_low && matches!(t, MessageType::MsgAppend | MessageType::MsgSnapshot)
    }
}
