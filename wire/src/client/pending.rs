//! Matching replies to the requests waiting for them, by xid, with no I/O.
//!
//! A ZooKeeper server answers the requests of one connection in the order it received them, so
//! ordinary requests wait in one FIFO queue and a reply must carry the xid at its front;
//! anything else is a protocol error (the Java client's "Xid out of order"). Two reserved xids
//! are the exception: Apache ZooKeeper answers auth packets (xid -4) as soon as it reads them,
//! ahead of earlier requests still in its pipeline, and the Java client keeps neither pings
//! (xid -2) nor auth packets in its ordered queue. Each of those gets a FIFO of its own.
//! SetWatches (xid -8) goes through the server's pipeline like any request, so it stays ordered.

use std::collections::VecDeque;

use tokio::sync::oneshot;

use super::error::ClientError;
use super::reply::{Reply, Wanted};
use crate::opcode::{OpCode, AUTH_XID, PING_XID};

/// Where a reply (or the connection's failure) is delivered.
pub(crate) type Waiter = oneshot::Sender<Result<Reply, ClientError>>;

/// One request written to the socket and not yet answered.
#[derive(Debug)]
pub(crate) struct Pending {
    /// The xid it was sent with.
    pub xid: i32,
    /// Its opcode, which says how to decode the reply body.
    pub op: OpCode,
    /// Whether its caller wants the body decoded, or the header alone.
    pub wanted: Wanted,
    /// `None` for the client's own pings, whose replies nobody waits for.
    pub waiter: Option<Waiter>,
}

/// A reply no request waits for at its place: the connection cannot be trusted after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StrayReply {
    #[error("reply xid {xid} out of order: expected xid {expected}")]
    OutOfOrder { xid: i32, expected: i32 },
    #[error("reply xid {0} answers no pending request")]
    Unasked(i32),
}

/// The requests in flight on one connection.
#[derive(Debug, Default)]
pub(crate) struct PendingQueues {
    ordered: VecDeque<Pending>,
    pings: VecDeque<Pending>,
    auths: VecDeque<Pending>,
}

impl PendingQueues {
    /// Records a request; call it before the request's bytes are written, so that its reply
    /// can never arrive first.
    pub fn push(&mut self, p: Pending) {
        match p.xid {
            PING_XID => self.pings.push_back(p),
            AUTH_XID => self.auths.push_back(p),
            _ => self.ordered.push_back(p),
        }
    }

    /// Takes the request a reply with `xid` answers.
    ///
    /// `Ok(None)` is a ping or auth reply nobody asked for: harmless, and ignored by the caller.
    ///
    /// # Errors
    /// [`StrayReply`] when an ordinary reply is out of order or answers nothing.
    pub fn take(&mut self, xid: i32) -> Result<Option<Pending>, StrayReply> {
        match xid {
            PING_XID => Ok(self.pings.pop_front()),
            AUTH_XID => Ok(self.auths.pop_front()),
            _ => match self.ordered.front() {
                Some(front) if front.xid == xid => Ok(self.ordered.pop_front()),
                Some(front) => Err(StrayReply::OutOfOrder { xid, expected: front.xid }),
                None => Err(StrayReply::Unasked(xid)),
            },
        }
    }

    /// Every request still waiting, oldest first within each queue.
    pub fn drain(&mut self) -> impl Iterator<Item = Pending> + '_ {
        self.ordered.drain(..).chain(self.pings.drain(..)).chain(self.auths.drain(..))
    }

    /// How many requests are in flight.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ordered.len() + self.pings.len() + self.auths.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcode::SET_WATCHES_XID;

    fn p(xid: i32, op: OpCode) -> Pending {
        Pending { xid, op, wanted: Wanted::Decoded, waiter: None }
    }

    #[test]
    fn ordinary_replies_must_come_in_order() {
        let mut q = PendingQueues::default();
        q.push(p(1, OpCode::Create));
        q.push(p(2, OpCode::GetData));
        q.push(p(SET_WATCHES_XID, OpCode::SetWatches));
        assert_eq!(q.take(1).unwrap().map(|e| e.op), Some(OpCode::Create));
        let err = q.take(SET_WATCHES_XID).unwrap_err();
        assert_eq!(err, StrayReply::OutOfOrder { xid: SET_WATCHES_XID, expected: 2 });
        assert!(err.to_string().contains("out of order"), "{err}");
        assert_eq!(q.take(2).unwrap().map(|e| e.op), Some(OpCode::GetData));
        assert_eq!(q.take(SET_WATCHES_XID).unwrap().map(|e| e.op), Some(OpCode::SetWatches));
        assert_eq!(q.take(3).unwrap_err(), StrayReply::Unasked(3));
        assert!(q.take(3).unwrap_err().to_string().contains("no pending"));
    }

    #[test]
    fn pings_and_auth_overtake_ordinary_requests() {
        let mut q = PendingQueues::default();
        q.push(p(1, OpCode::GetData));
        q.push(p(AUTH_XID, OpCode::Auth));
        q.push(p(PING_XID, OpCode::Ping));
        q.push(p(PING_XID, OpCode::Ping));
        assert_eq!(q.take(AUTH_XID).unwrap().map(|e| e.op), Some(OpCode::Auth));
        assert!(q.take(AUTH_XID).unwrap().is_none(), "an unsolicited auth reply is not fatal");
        assert!(q.take(PING_XID).unwrap().is_some());
        assert_eq!(q.len(), 2);
        assert_eq!(q.drain().map(|e| e.xid).collect::<Vec<_>>(), vec![1, PING_XID]);
        assert_eq!(q.len(), 0);
    }
}
