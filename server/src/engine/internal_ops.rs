//! What ZooKeeper 3.8 answers a client that sends one of the opcodes it keeps for itself
//! (measured; `tests/tests/zk_request_edges.rs` compares them with a live ZooKeeper). Keeper
//! knows none of them, so in keeper flavor they are unknown opcodes (the connection closes).
//!
//! - sasl (102): with no SASL configured, `ZooKeeperServer.processSasl` catches the missing
//!   SASL server and answers OK (zxid 0) with a null token, when the body holds a token
//!   buffer; without one, reading the record fails and the connection closes unanswered.
//! - deleteContainer (20): `PrepRequestProcessor` reads the path from the whole packet, the
//!   request header included, so validation always fails: BADARGUMENTS, as an error txn that
//!   takes a zxid.
//! - createSession (-10): a body that does not hold a `CreateSessionTxn` is MARSHALLINGERROR,
//!   as an error txn that takes a zxid. A body that does (its first four bytes, the timeout,
//!   are all `PrepRequestProcessor` reads) is logged as a txn that takes a zxid, and once it
//!   commits the connection gets a second connect response for its own session
//!   (`ZooKeeperServer.finishSessionInit`: the negotiated timeout, the session id, its
//!   password, the read-only flag) and stays open. The session keeps its negotiated timeout.

use std::time::Instant;

use testkeeper_wire::jute::Reader;
use testkeeper_wire::{OpCode, ZkError};
use tracing::debug;

use super::order::{Queued, Work};
use super::{Engine, Flow};

impl Engine {
    /// An opcode the codec decodes no request for, with the frame's body after the header.
    pub fn internal_op(&mut self, conn: u64, xid: i32, op: i32, body: &[u8]) -> Flow {
        if !self.state.rules().unknown_op_replies {
            return self.unknown_op(conn, xid, op);
        }
        let work = match OpCode::try_from(op) {
            Ok(OpCode::Sasl) if Reader::new(body).buffer("GetSASLRequest.token").is_ok() => Work::Sasl,
            Ok(OpCode::Sasl) => {
                debug!("sasl request without a token: closing, as ZooKeeper does");
                return Flow::Close;
            }
            Ok(OpCode::DeleteContainer) => Work::FailWrite(OpCode::DeleteContainer, ZkError::BadArguments),
            Ok(OpCode::CreateSession) if body.len() >= 4 => Work::SessionAgain,
            Ok(OpCode::CreateSession) => Work::FailWrite(OpCode::CreateSession, ZkError::MarshallingError),
            _ => return self.unknown_op(conn, xid, op),
        };
        let Some((session, blackholed)) = self.conns.get(&conn).map(|c| (c.session, c.blackholed)) else {
            return Flow::Close;
        };
        if blackholed {
            return Flow::Continue;
        }
        self.stats.packets_received += 1;
        if let Some(c) = self.conns.get_mut(&conn) {
            c.received += 1;
        }
        let q = Queued { conn, xid, work, started: Instant::now() };
        self.submit_or_run(session, q);
        Flow::Continue
    }
}
