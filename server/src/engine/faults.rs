//! The engine side of faults: what each action does to a request on its one path through
//! `Engine::handle`. `before` runs ahead of the session's order and may end the request
//! there; `after` runs once the request has taken its place.
//!
//! Every action works through what a connection already has: its `Out` queue (a delay or a
//! reset marker the writer honours), `end_session`, and a mute flag that makes `Engine::send`
//! drop frames, so a dropped response is one whose request went through the ordinary
//! propose/commit/reply path and whose bytes never left.

use std::time::Instant;

use testkeeper_wire::Request;
use tracing::{debug, info};

use super::order::{Queued, Work};
use super::{Engine, Flow, Out};
use crate::faults::{Action, At};

/// What happens to a request after the pre-dispatch check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Dispatch as usual.
    Dispatch,
    /// Dispatch with the connection muted, then close it (drop-response).
    DispatchMuted,
    /// Done: the fault replaced the request; the connection goes on as told.
    Done(Flow),
}

impl Engine {
    /// Consults the fault rules for a request about to be dispatched, and carries out a
    /// pre-dispatch action.
    pub(crate) fn fault_before(&mut self, conn: u64, session: i64, xid: i32, req: &Request, started: Instant) -> Step {
        let Some(fired) = self.faults.check(req, session, xid, self.fault_at()) else {
            return Step::Dispatch;
        };
        let (op, rule) = (req.op().name(), fired.rule);
        let path = req.path().unwrap_or("");
        if fired.action.is_tap() {
            debug!(rule, op, %path, session = format_args!("{session:#x}"), xid, "tap matched");
        } else {
            info!(rule, kind = %fired.action.kind(), op, %path, session = format_args!("{session:#x}"), xid, "fault fired");
        }
        match fired.action {
            Action::Reset => {
                self.conns.queue_out(conn, Out::Reset);
                Step::Done(Flow::Close)
            }
            Action::DropRequest => Step::Done(Flow::Close),
            Action::Error(code) => {
                // The error reply takes the request's place in the session's order.
                self.submit(session, Queued { conn, xid, work: Work::Fail(code), started });
                Step::Done(Flow::Continue)
            }
            Action::ExpireSession => {
                // Through the same path as a timeout: close-session entry, ephemerals and
                // watches gone, connection closed; a resume then gets SESSION_EXPIRED.
                self.end_session_because(session, super::sessions::End::Fault);
                Step::Done(Flow::Close)
            }
            Action::Delay { base, .. } => {
                // Queued ahead of the reply: the writer flushes what came before, waits, then
                // writes the reply and everything after it, in order.
                let d = fired.delay.unwrap_or(base);
                if !d.is_zero() {
                    self.conns.queue_out(conn, Out::Delay(d));
                }
                Step::Dispatch
            }
            Action::Blackhole => {
                // Nothing of this connection is answered or even read any more: its session's
                // pings are lost too, so it expires on its timeout, as behind a partition.
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.muted = true;
                    c.blackholed = true;
                }
                Step::Done(Flow::Continue)
            }
            // Connection rules are never consulted for a request.
            Action::Refuse => Step::Dispatch,
            Action::DropResponse => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.muted = true;
                }
                Step::DispatchMuted
            }
        }
    }

    /// Finishes a request that took its place: a muted connection is closed (its session
    /// lives on until its timeout, so a resuming client keeps its ephemerals).
    pub(crate) fn fault_after(&mut self, step: Step) -> Flow {
        match step {
            Step::DispatchMuted => Flow::Close,
            _ => Flow::Continue,
        }
    }
}

impl Engine {
    /// The clock and the last committed zxid, stamped on a fired fault.
    pub(crate) fn fault_at(&self) -> At {
        At { time_ms: self.clock.now_ms(), zxid: self.state.zxid() }
    }

    /// Whether a connection rule (`refuse`) closes this new connection before its handshake.
    pub(crate) fn refuse_connect(&mut self, session: i64) -> bool {
        let at = self.fault_at();
        let Some(fired) = self.faults.check_connect(session, at) else { return false };
        info!(rule = fired.rule, kind = %fired.action.kind(), "fault fired: new connection refused");
        true
    }
}
