//! A follower of a cluster of three applies an entry as soon as it knows the entry is
//! committed, one hop before the leader tells it. The leader and one follower are a majority of
//! three: an entry of the leader's term that the leader held in its log when it sent it (a
//! `stored` message, see `Log::stored_before_sending`) and that this follower has appended and
//! flushed is on a majority, which is what committed means in Raft (an entry of the leader's
//! current term stored on a majority, Raft paper §5.4.2). Waiting for the leader's commit index
//! would cost the follower's acknowledgement and the leader's next message: for a write made
//! through a follower, two of its six hops. raft-rs reports the same entries committed later,
//! and `apply` skips what is already applied.
//!
//! Only entries of the message's own term count (an older term's entry is not committed by
//! being on a majority), only in the term this node is in, and only once raft-rs has them
//! persisted here (so a durable follower of an in-memory leader applies ahead too, after its
//! flush).
//!
//! A leader whose messages are `stored` and whose followers all apply so (three voters or
//! fewer) does not send raft-rs's extra append that only moves the commit index
//! (`skip_bcast_commit`): no follower waits for it, and each such append cost every follower a
//! wake-up, a read and an acknowledgement, and the leader two of each. The commit index still
//! reaches the followers in the next append or heartbeat.

use raft::eraftpb::{Message, MessageType};

use super::Driver;

/// The proof this node collects, and what it applied on it.
#[derive(Debug, Default)]
pub struct Ahead {
    on: bool,
    /// (index, term) of the newest entry of its term that a leader held when it sent it.
    held: Option<(u64, u64)>,
    /// How many entries were applied so.
    pub count: u64,
}

impl Ahead {
    /// `on`: the leader's copy and this node's make a majority (the leader's messages say
    /// whether it stored first).
    pub fn new(on: bool) -> Ahead {
        Ahead { on, ..Ahead::default() }
    }

    /// raft-rs accepted a message whose sender held `held`.
    pub fn leader_holds(&mut self, held: Option<(u64, u64)>) {
        let Some((index, term)) = held.filter(|_| self.on) else { return };
        let newer = match self.held {
            Some((i, t)) => (term, index) > (t, i),
            None => true,
        };
        if newer {
            self.held = Some((index, term));
        }
    }
}

/// The newest entry of a leader's append that its sender created (its own term's).
pub fn held_by_sender(m: &Message) -> Option<(u64, u64)> {
    if m.get_msg_type() != MessageType::MsgAppend {
        return None;
    }
    m.entries.iter().filter(|e| e.term == m.term).map(|e| e.index).max().map(|i| (i, m.term))
}

impl Driver {
    /// After a `Ready`: hands the engine, up to the entry the leader held, what this node has
    /// persisted of the leader's term. Returns false if the log cannot be read.
    pub(super) fn apply_on_stored(&mut self) -> bool {
        let Some((index, term)) = self.ahead.held else { return true };
        let log = &self.node.raft.raft_log;
        if self.node.raft.term != term || log.term(index).ok() != Some(term) {
            // A newer term, or an append this node refused: no proof for this node's log.
            self.ahead.held = None;
            return true;
        }
        if log.persisted < index {
            return true;
        }
        self.ahead.held = None;
        // Everything up to `handed` is with the engine already (committed, or applied so).
        let from = self.handed.max(log.applied);
        if index <= from {
            return true;
        }
        let entries = match self.node.store().our_entries(from + 1, index + 1) {
            Ok(e) => e,
            Err(e) => return self.fail(format!("reading entries {}..={index} to apply: {e}", from + 1)),
        };
        self.ahead.count += entries.len() as u64;
        self.apply_ours(entries);
        true
    }
}
