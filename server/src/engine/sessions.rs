//! The live sessions at run time, one type: each session's record (timeout and deadline on
//! the monotonic clock, the connection bound to it, whether its end is proposed and why) and
//! its place in the per-session order (`order`: its uncommitted writes and what waits behind
//! them). What is replicated about a session (id, timeout, password, ephemerals) is in the
//! state machine; this is what one server keeps beside it, and forgets when the session's end
//! commits.
//!
//! The engine asks, this type answers: whether a request runs now or waits, which sessions
//! are due, what a resume finds. It never sends, proposes or touches a connection itself.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::order::{Queued, Turn, Work};

/// A session's run-time record (what is not replicated state).
#[derive(Debug, Default)]
pub struct SessionRt {
    pub timeout_ms: i32,
    /// The connection currently bound to the session, if any.
    pub conn: Option<u64>,
    /// When the session expires unless touched, on the monotonic clock (`Clock::mono_ms`).
    pub deadline_ms: i64,
    /// Its end is proposed: nothing more of it runs.
    pub closing: bool,
    /// Why it ends, once `closing`: for the log line when the end commits.
    pub end: Option<End>,
    /// Its uncommitted writes and what waits behind them.
    pub(crate) turn: Turn,
}

/// Why a session ended, as its log line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The client sent closeSession.
    Closed,
    /// Its timeout passed without a request.
    Timeout,
    /// An `expire-session` fault fired on one of its requests.
    Fault,
    /// Asked for: `TestKeeper::expire_session`, `POST /api/v1/sessions/{id}/expire`.
    Asked,
}

/// Every session this server keeps a run-time record of, by id. Integer keys the server chose
/// itself, looked up on every request: foldhash with a fixed seed instead of std's SipHash.
#[derive(Debug, Default)]
pub struct Sessions {
    map: HashMap<i64, SessionRt, FixedState>,
}

impl FromIterator<(i64, SessionRt)> for Sessions {
    fn from_iter<I: IntoIterator<Item = (i64, SessionRt)>>(iter: I) -> Sessions {
        Sessions { map: iter.into_iter().collect() }
    }
}

impl Sessions {
    pub fn get(&self, id: i64) -> Option<&SessionRt> {
        self.map.get(&id)
    }

    pub(crate) fn get_mut(&mut self, id: i64) -> Option<&mut SessionRt> {
        self.map.get_mut(&id)
    }

    pub fn contains(&self, id: i64) -> bool {
        self.map.contains_key(&id)
    }

    /// Whether the session is here and its end not proposed.
    pub fn is_live(&self, id: i64) -> bool {
        self.map.get(&id).is_some_and(|s| !s.closing)
    }

    /// How many records are kept (sessions whose end is proposed but not committed included).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// How many sessions are live (their end not proposed).
    pub fn live(&self) -> usize {
        self.map.values().filter(|s| !s.closing).count()
    }

    /// Every id, ordered (for listings, which must not depend on the map's order).
    pub fn ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.map.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The session's negotiated timeout (0 for one not here).
    pub fn timeout_ms(&self, id: i64) -> i32 {
        self.map.get(&id).map_or(0, |s| s.timeout_ms)
    }

    /// Keeps a record for a new session.
    pub(crate) fn insert(&mut self, id: i64, rt: SessionRt) {
        self.map.insert(id, rt);
    }

    /// Forgets a session (its end committed).
    pub(crate) fn remove(&mut self, id: i64) -> Option<SessionRt> {
        self.map.remove(&id)
    }

    /// Restarts a session's expiry countdown at `now` (every request does this).
    pub(crate) fn touch(&mut self, id: i64, now: i64) {
        if let Some(s) = self.map.get_mut(&id) {
            s.deadline_ms = now + i64::from(s.timeout_ms);
        }
    }

    /// Restarts every session's countdown (after an in-memory restart, as ZooKeeper's sessions
    /// get their timeouts again when it comes back).
    pub(crate) fn touch_all(&mut self, now: i64) {
        for s in self.map.values_mut() {
            s.deadline_ms = now + i64::from(s.timeout_ms);
        }
    }

    /// The live sessions whose deadline is at or before `now`, ordered by id so that their
    /// ends are proposed in the same order on every run.
    pub(crate) fn due(&self, now: i64) -> Vec<i64> {
        let mut due: Vec<i64> =
            self.map.iter().filter(|(_, s)| !s.closing && s.deadline_ms <= now).map(|(id, _)| *id).collect();
        due.sort_unstable();
        due
    }

    /// Marks a live session's end as proposed, saying why. Returns whether it was live.
    pub(crate) fn begin_end(&mut self, id: i64, why: End) -> bool {
        match self.map.get_mut(&id) {
            Some(s) if !s.closing => {
                (s.closing, s.end) = (true, Some(why));
                true
            }
            _ => false,
        }
    }

    /// Connection `conn` ended: the session, if it was bound to it, has none now.
    pub(crate) fn unbind(&mut self, id: i64, conn: u64) {
        if let Some(s) = self.map.get_mut(&id).filter(|s| s.conn == Some(conn)) {
            s.conn = None;
        }
    }

    /// One more of the session's entries is in flight (a write proposed, a sync asked).
    pub(crate) fn one_more_in_flight(&mut self, id: i64) {
        if let Some(rt) = self.map.get_mut(&id) {
            rt.turn.inflight += 1;
        }
    }

    /// One of the session's entries is answered.
    pub(crate) fn one_answered(&mut self, id: i64) {
        if let Some(rt) = self.map.get_mut(&id) {
            rt.turn.inflight -= 1;
        }
    }

    /// `q` joins its session's order: returned to run now if nothing is ahead of it (a write
    /// runs past uncommitted writes, anything else waits for them), kept otherwise. A request
    /// of a session not here is dropped.
    pub(crate) fn take_turn(&mut self, id: i64, q: Queued, write: bool) -> Option<Queued> {
        let turn = &mut self.map.get_mut(&id)?.turn;
        if !turn.queued.is_empty() || (!write && turn.inflight > 0) {
            turn.queued.push_back(q);
            return None;
        }
        Some(q)
    }

    /// The next request of the session that may run now, if any: the front of its queue, when
    /// it is a write or nothing of the session is in flight. A session whose end is proposed
    /// runs nothing more (what it queued is dropped).
    pub(crate) fn next_turn(&mut self, id: i64, is_write: impl Fn(&Work) -> bool) -> Option<Queued> {
        let rt = self.map.get_mut(&id)?;
        if rt.closing {
            rt.turn.queued.clear();
            return None;
        }
        let front = rt.turn.queued.front()?;
        if !is_write(&front.work) && rt.turn.inflight > 0 {
            return None;
        }
        rt.turn.queued.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn q(xid: i32, work: Work) -> Queued {
        Queued { conn: 1, xid, work, started: Instant::now() }
    }

    fn write(w: &Work) -> bool {
        matches!(w, Work::SessionAgain)
    }

    #[test]
    fn a_read_waits_for_earlier_writes_and_everything_after_it_waits_too() {
        let mut s = Sessions::default();
        s.insert(7, SessionRt { timeout_ms: 100, ..Default::default() });
        // A write runs at once, and is in flight.
        assert!(s.take_turn(7, q(1, Work::SessionAgain), true).is_some());
        s.one_more_in_flight(7);
        // A read waits for it; a write after the read waits behind the read.
        assert!(s.take_turn(7, q(2, Work::Sasl), false).is_none());
        assert!(s.take_turn(7, q(3, Work::SessionAgain), true).is_none());
        assert!(s.next_turn(7, write).is_none(), "the read still waits");
        s.one_answered(7);
        assert_eq!(s.next_turn(7, write).map(|q| q.xid), Some(2));
        assert_eq!(s.next_turn(7, write).map(|q| q.xid), Some(3));
        assert!(s.next_turn(7, write).is_none());
        // Nothing of a session not here runs.
        assert!(s.take_turn(8, q(4, Work::Sasl), false).is_none());
    }

    #[test]
    fn a_closing_session_runs_nothing_more_and_is_not_due() {
        let mut s = Sessions::default();
        s.insert(1, SessionRt { timeout_ms: 10, deadline_ms: 10, ..Default::default() });
        s.insert(2, SessionRt { timeout_ms: 10, deadline_ms: 5, ..Default::default() });
        s.one_more_in_flight(1);
        assert!(s.take_turn(1, q(1, Work::Sasl), false).is_none());
        assert_eq!(s.due(10), vec![1, 2]);
        assert!(s.begin_end(1, End::Timeout));
        assert!(!s.begin_end(1, End::Fault), "an end is proposed once");
        assert_eq!(s.due(10), vec![2]);
        assert!(s.next_turn(1, write).is_none());
        assert!(s.get(1).unwrap().turn.queued.is_empty(), "what it queued is dropped");
        assert_eq!((s.live(), s.len()), (1, 2));
        s.touch(2, 20);
        assert!(s.due(10).is_empty());
    }
}
