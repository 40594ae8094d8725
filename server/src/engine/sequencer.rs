//! Who orders this engine's entries: the one seam between the request path and the two
//! halves of the commit stream. Standalone, the engine's own log decides, orders and makes
//! entries durable (`local_log`); in a cluster, the leader's proposer decides
//! (`cluster/lead.rs`) and raft orders them in the driver's log. Dispatch, the per-session
//! order, `commit`, `apply` and the replies are the same code in both modes: they propose
//! through [`Engine::propose`] and ask the sequencer what differs (whether committed entries
//! are waiting to be appended here, what an applied index frees, which log a snapshot
//! compacts, what a divergence stops), instead of asking whether they run in a cluster.

use std::sync::Arc;

use testkeeper_core::pending::View;
use testkeeper_core::propose::Decide;
use testkeeper_core::state::State;
use testkeeper_core::txn::Entry;

use super::local_log::LocalLog;
use super::log_info::LogInfo;
use super::waiters::Reply;
use super::Engine;
use crate::cluster::Replica;
use crate::log::{Log, Syncer};

/// The half of the commit stream an engine hands its decisions to.
// One per engine, made once: its size wastes nothing. The standalone log stays inline (the
// request path reaches it on every write); a cluster node's part is behind one pointer.
#[expect(clippy::large_enum_variant, reason = "one per engine; the hot standalone variant stays inline")]
pub(crate) enum Sequencer {
    /// Standalone: this engine's proposer and log.
    Local(LocalLog),
    /// A cluster node: its driver link, role and (while it leads) its proposer; the log is
    /// the driver's.
    Raft(Box<Replica>),
}

impl Sequencer {
    /// The cluster part, on a cluster node.
    pub(crate) fn replica(&self) -> Option<&Replica> {
        match self {
            Sequencer::Raft(r) => Some(r),
            Sequencer::Local(_) => None,
        }
    }

    /// The cluster part, on a cluster node.
    pub(crate) fn replica_mut(&mut self) -> Option<&mut Replica> {
        match self {
            Sequencer::Raft(r) => Some(r),
            Sequencer::Local(_) => None,
        }
    }

    /// Whether raft orders the entries (a cluster node).
    pub(crate) fn is_raft(&self) -> bool {
        matches!(self, Sequencer::Raft(_))
    }

    /// Whether a sync waits for the leader (a round trip through raft's log, or ZooKeeper's
    /// catch-up with the leader's last proposal); standalone this server is the leader, and a
    /// sync is answered at once, in its session's order.
    pub(crate) fn syncs_with_leader(&self) -> bool {
        self.is_raft()
    }

    /// The committed tree plus every decision not applied yet (a follower decides nothing:
    /// the committed tree alone).
    pub(crate) fn view<'a>(&'a self, state: &'a State) -> View<'a> {
        match self {
            Sequencer::Local(l) => l.view(state),
            Sequencer::Raft(r) => r.view(state),
        }
    }

    /// Appends what this engine decided since the last call, and returns the entries that
    /// commit now (see [`LocalLog::append`]). Raft's log is the driver's: never any here.
    pub(crate) fn append(&mut self, applied: u64, info: &mut LogInfo) -> Option<Vec<Entry>> {
        match self {
            Sequencer::Local(l) => l.append(applied, info),
            Sequencer::Raft(_) => None,
        }
    }

    /// Takes back a vector [`append`](Self::append) returned, for its allocation.
    pub(crate) fn recycle(&mut self, used: Vec<Entry>) {
        if let Sequencer::Local(l) = self {
            l.recycle(used);
        }
    }

    /// The next appended entry a flush up to `index` made durable.
    pub(crate) fn take_durable(&mut self, index: u64) -> Option<Entry> {
        match self {
            Sequencer::Local(l) => l.take_durable(index),
            Sequencer::Raft(_) => None,
        }
    }

    /// Whether entries appended here wait for a flush.
    pub(crate) fn needs_sync(&self) -> bool {
        match self {
            Sequencer::Local(l) => l.needs_sync(),
            Sequencer::Raft(_) => false,
        }
    }

    /// The syncer of the log this engine appends to, when entries must be flushed first.
    pub(crate) fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        match self {
            Sequencer::Local(l) => l.syncer(),
            Sequencer::Raft(_) => None,
        }
    }

    /// Entry `index` was applied: the proposer's overlay lets go of it.
    pub(crate) fn committed(&mut self, index: u64) {
        match self {
            Sequencer::Local(l) => l.committed(index),
            Sequencer::Raft(r) => r.committed(index),
        }
    }

    /// The log this engine owns, to compact under a snapshot; a cluster node's is the
    /// driver's, which compacts it itself.
    pub(crate) fn own_log(&mut self) -> Option<&mut dyn Log> {
        match self {
            Sequencer::Local(l) => Some(l.log()),
            Sequencer::Raft(_) => None,
        }
    }

    /// Whether an entry whose digest disagrees with this tree is a broken invariant of the
    /// process (standalone: this engine decided it against this very tree), rather than one
    /// node's divergence from its cluster.
    pub(crate) fn divergence_is_fatal(&self) -> bool {
        matches!(self, Sequencer::Local(_))
    }

    /// Hands the log over (to a cluster node's Raft storage) and keeps an empty one.
    pub(crate) fn take_log(&mut self) -> Option<Box<dyn Log>> {
        match self {
            Sequencer::Local(l) => Some(l.take_log()),
            Sequencer::Raft(_) => None,
        }
    }

    /// Lets go of the log this engine owns (so its data directory can be opened again).
    pub(crate) fn release(&mut self) {
        if let Sequencer::Local(l) = self {
            l.release();
        }
    }
}

impl Engine {
    /// Proposes `what` for `session`; `reply` waits for it. Standalone this engine decides
    /// and, in memory, commits at once (the reply is queued before the next request); in a
    /// cluster the proposal goes to the leader's proposer, here or through the driver.
    pub(crate) fn propose(&mut self, session: i64, what: Decide<'_>, reply: Reply) {
        let origin = self.wait(session, reply);
        match &mut self.seq {
            Sequencer::Local(l) => {
                // Read here, where the time is decided: a cluster's leader reads its own.
                let now = self.readings.wall_ms(&self.clock);
                let (_, at_once) = l.decide(&self.state, session, now, origin, what);
                if at_once {
                    self.settle();
                }
            }
            Sequencer::Raft(_) => self.propose_in_cluster(origin, session, what),
        }
    }
}
