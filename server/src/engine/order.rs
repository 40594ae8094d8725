//! ZooKeeper's FIFO-per-session promise with writes in flight: a session's writes are proposed
//! as they arrive (many may be uncommitted at once), but anything else it sends (a read, a
//! ping, an auth, a watch change, a fault's error reply) waits until every write before it has
//! committed, and once something waits, everything after it waits too. So a read sees the
//! session's earlier writes, and replies leave in request order, as clients require.

use std::collections::VecDeque;
use std::time::Instant;

use testkeeper_wire::Request;

use super::Engine;

/// What a queued request turns into when its turn comes.
#[derive(Debug)]
pub(crate) enum Work {
    /// An ordinary request.
    Req(Request),
    /// A fault replaced the request with this error reply.
    Fail(i32),
    /// An opcode the flavor does not know (the reply, if any, then the close).
    Unknown(i32),
    /// A request the flavor's server refuses as an error entry that takes a zxid (ZooKeeper's
    /// error txn): a client's deleteContainer or createSession.
    FailWrite(testkeeper_wire::OpCode, testkeeper_wire::ZkError),
    /// A client's sasl request, where no SASL is configured: OK with a null token, zxid 0.
    Sasl,
    /// A client's createSession whose body holds a timeout: ZooKeeper logs it (a zxid) and
    /// answers with a connect response for the connection's own session.
    SessionAgain,
}

/// A request waiting for its turn.
#[derive(Debug)]
pub(crate) struct Queued {
    pub conn: u64,
    pub xid: i32,
    pub work: Work,
    pub started: Instant,
}

/// A session's place in the order: its uncommitted writes and what waits behind them.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// Proposed entries of this session not committed yet.
    pub inflight: u32,
    pub queued: VecDeque<Queued>,
}

impl Engine {
    /// Whether `work` is proposed (goes through the log) rather than answered locally.
    pub(crate) fn is_write(&self, work: &Work) -> bool {
        match work {
            Work::Req(req) => self.is_write_req(req),
            Work::FailWrite(..) | Work::SessionAgain => true,
            Work::Fail(_) | Work::Unknown(_) | Work::Sasl => false,
        }
    }

    /// Whether `req` waits for something outside this node (the log, or in a cluster the
    /// leader: a sync) rather than being answered here at once.
    pub(crate) fn is_write_req(&self, req: &Request) -> bool {
        waits_elsewhere(req, self.state.rules(), self.seq.syncs_with_leader())
    }

    /// Runs `q` now if its session lets it, else queues it behind the session's writes (a
    /// request of a session not here is dropped).
    pub(crate) fn submit(&mut self, session: i64, q: Queued) {
        let write = self.is_write(&q.work);
        if let Some(q) = self.sessions.take_turn(session, q, write) {
            self.run(session, q);
        }
    }

    /// [`submit`](Self::submit), or, for a connection with no session yet, run at once.
    pub(crate) fn submit_or_run(&mut self, session: i64, q: Queued) {
        if self.sessions.contains(session) {
            self.submit(session, q);
        } else {
            self.run(session, q);
        }
    }

    /// One of `session`'s entries committed: runs what was waiting for it, in order, until
    /// something has to wait again.
    pub(crate) fn resume(&mut self, session: i64) {
        loop {
            // The fields apart, not `is_write_req`: `sessions` is borrowed for the call.
            let (rules, syncs) = (self.state.rules(), self.seq.syncs_with_leader());
            // Only a request proper counts as a write here: a queued fault reply or error
            // entry waits for the writes ahead of it.
            let write = |work: &Work| matches!(work, Work::Req(req) if waits_elsewhere(req, rules, syncs));
            let Some(q) = self.sessions.next_turn(session, write) else { return };
            self.run(session, q);
        }
    }
}

/// [`Engine::is_write_req`] from the two things it reads, for a caller that holds another field
/// of the engine borrowed.
fn waits_elsewhere(req: &Request, rules: &testkeeper_core::flavor::Rules, syncs_with_leader: bool) -> bool {
    super::dispatch::is_write(req, rules) || (syncs_with_leader && matches!(req, Request::Sync(_)))
}
