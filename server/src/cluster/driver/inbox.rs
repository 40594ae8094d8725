//! What a node's peers send it, stepped or handled by the driver: raft-rs's messages (with
//! the proof that the sender holds their entries, `driver/ahead.rs`) and ours (forwarded
//! writes, refusals, session activity, zookeeper-flavor sync, session moves); and raft-rs's
//! own messages on their way out.

use raft::eraftpb::Message;
use tracing::warn;

use super::super::message::Msg;
use super::super::{Event, NodeId};
use super::{ahead, Driver};

impl Driver {
    /// One message from peer `from`.
    pub(super) fn message(&mut self, from: NodeId, msg: Msg) {
        match msg {
            Msg::Raft { msg: m, stored } => {
                use raft::eraftpb::MessageType::{MsgAppend, MsgHeartbeat};
                if matches!(m.get_msg_type(), MsgAppend | MsgHeartbeat) && m.term >= self.node.raft.term {
                    self.leader_commit = self.leader_commit.max(m.commit);
                }
                if self.dropped_for_disk(m.get_msg_type()) {
                    return;
                }
                let held = if stored { ahead::held_by_sender(&m) } else { None };
                match self.node.step(m) {
                    Ok(()) => self.ahead.leader_holds(held),
                    Err(e) => warn!(node = self.id, from, error = %e, "raft message refused"),
                }
            }
            Msg::Forward { origin, session, proposal } => {
                if self.forwarded.first_time(origin) {
                    self.proposal(origin, session, proposal);
                } else {
                    warn!(node = self.id, from, origin, "a forwarded proposal arrived twice; the copy is dropped");
                }
            }
            Msg::Refuse { origin, code } => self.refuse_local(origin, code),
            Msg::Touch { sessions } => self.emit(Event::Touch(sessions)),
            Msg::SyncAsk { id } => {
                let index = self.node.raft.raft_log.last_index();
                self.net.send(self.id, from, Msg::SyncAnswer { id, index });
            }
            Msg::SyncAnswer { id, index } => {
                if self.gate_answered(id, index) {
                    return;
                }
                self.emit(Event::SyncAnswered { id, index });
            }
            Msg::Revalidate { session } => self.emit(Event::Owner { session, node: from }),
        }
    }

    /// Sends raft-rs's messages; `stored`: every entry they carry is in this node's log.
    pub(super) fn send(&self, msgs: Vec<Message>, stored: bool) {
        for m in msgs {
            let to = m.to;
            self.net.send(self.id, to, Msg::Raft { msg: m, stored });
        }
    }
}
