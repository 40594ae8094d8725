//! The proposer: the leader's decision. It turns a request (or a session event) into the next
//! log [`Entry`], deciding against the committed state plus every uncommitted change (the
//! [`Pending`] overlay) the index, the zxid, the time it is given, the session id, the
//! sequential suffix, the ephemeral owner, and the tree digest after the change. This is the
//! only place entries are made. It changes no state: the entry's effects are staged in the
//! overlay, and the tree changes only when `State::apply` commits the entry.

use testkeeper_wire::{Request, ZkError};

use crate::acl::AuthId;
use crate::apply::ops::At;
use crate::apply::{stage, stage_close};
use crate::digest::DIGEST_VERSION;
use crate::node::CONTAINER_OWNER;
use crate::pending::{Pending, Staging, View};
use crate::prepare::{close_order, decide, Ctx};
use crate::state::State;
use crate::txn::{Entry, Txn};

/// What to decide.
#[derive(Debug, Clone, Copy)]
pub enum Decide<'a> {
    /// A client write (or multi, or closeSession) with the identities its connection holds.
    Write { req: &'a Request, auth: &'a [AuthId] },
    /// A new session with its negotiated timeout and the password its client must show to
    /// resume it (the caller's random bytes, as it gives the time).
    CreateSession { timeout_ms: i32, passwd: [u8; 16] },
    /// A no-op through the log (Keeper's `sync` in a cluster).
    Noop,
    /// The end of a session (expiry, or the embedding API).
    CloseSession { id: i64 },
    /// A request the leader refuses before deciding it, as an error entry that takes a zxid
    /// (ZooKeeper's error txn): SESSIONMOVED for a session whose connection moved elsewhere.
    Fail(ZkError),
}

/// An owned [`Decide`]: what a follower sends its leader, and a cluster node its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposal {
    Write { req: Request, auth: Vec<AuthId> },
    CreateSession { timeout_ms: i32, passwd: [u8; 16] },
    CloseSession { id: i64 },
    Noop,
    Fail(ZkError),
}

impl Proposal {
    /// The owned form of `d`.
    pub fn of(d: &Decide<'_>) -> Proposal {
        match *d {
            Decide::Write { req, auth } => Proposal::Write { req: req.clone(), auth: auth.to_vec() },
            Decide::CreateSession { timeout_ms, passwd } => Proposal::CreateSession { timeout_ms, passwd },
            Decide::CloseSession { id } => Proposal::CloseSession { id },
            Decide::Noop => Proposal::Noop,
            Decide::Fail(e) => Proposal::Fail(e),
        }
    }

    /// The borrowed form the proposer takes.
    pub fn decide(&self) -> Decide<'_> {
        match self {
            Proposal::Write { req, auth } => Decide::Write { req, auth },
            Proposal::CreateSession { timeout_ms, passwd } => {
                Decide::CreateSession { timeout_ms: *timeout_ms, passwd: *passwd }
            }
            Proposal::CloseSession { id } => Decide::CloseSession { id: *id },
            Proposal::Noop => Decide::Noop,
            Proposal::Fail(e) => Decide::Fail(*e),
        }
    }
}

/// A proposer's position, to undo proposals that were not appended after all.
#[derive(Debug, Clone, Copy)]
pub struct Checkpoint {
    mark: crate::pending::Mark,
    last_index: u64,
    last_zxid: i64,
    next_session_id: i64,
}

/// The leader's decision state: the overlay, and the counters as of the last proposed entry.
#[derive(Debug, Clone)]
pub struct Proposer {
    pending: Pending,
    last_index: u64,
    term: u64,
    last_zxid: i64,
    next_session_id: i64,
    /// Deliberately broken (the chaos checkers' self-test, `partial-multi`): a failed multi
    /// keeps the ops before the failing one.
    partial_multi: bool,
}

impl Proposer {
    /// A proposer whose next entry follows `state`'s last applied one, in term `term`.
    pub fn new(state: &State, term: u64) -> Proposer {
        Proposer {
            pending: Pending::new(&state.tree),
            last_index: state.last_index,
            term,
            last_zxid: state.zxid,
            next_session_id: state.next_session_id,
            partial_multi: false,
        }
    }

    /// Deliberately breaks multi atomicity (see the field): for the chaos self-test only.
    pub fn set_broken_partial_multi(&mut self, on: bool) {
        self.partial_multi = on;
    }

    /// Where the proposer stands now, to undo the next proposal if it cannot be appended.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            mark: self.pending.mark(),
            last_index: self.last_index,
            last_zxid: self.last_zxid,
            next_session_id: self.next_session_id,
        }
    }

    /// Undoes every proposal made since `cp` (their entries were never appended).
    pub fn restore(&mut self, cp: Checkpoint) {
        self.pending.rollback(cp.mark);
        self.pending.seal();
        (self.last_index, self.last_zxid, self.next_session_id) = (cp.last_index, cp.last_zxid, cp.next_session_id);
    }

    /// Forgets every uncommitted decision (a failed append, a lost leadership): the next entry
    /// follows `state` again, in term `term`, at index `next_index`.
    pub fn reset(&mut self, state: &State, term: u64, next_index: u64) {
        let partial_multi = self.partial_multi;
        *self = Proposer::new(state, term);
        self.last_index = next_index - 1;
        self.partial_multi = partial_multi;
    }

    /// Whether entries are proposed that the state has not applied yet.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Index of the last proposed entry.
    pub fn last_index(&self) -> u64 {
        self.last_index
    }

    /// The tree digest after every proposed entry.
    pub fn digest(&self) -> u64 {
        self.pending.digest()
    }

    /// The committed tree seen through the uncommitted changes.
    pub fn view<'a>(&'a self, state: &'a State) -> View<'a> {
        View::new(&state.tree, &self.pending)
    }

    /// The state has applied entry `index`: its staged changes leave the overlay.
    pub fn committed(&mut self, index: u64) {
        self.pending.committed(index);
    }

    /// Decides the next entry for `session` at leader time `time_ms`, for whoever `origin`
    /// names (see [`Entry::origin`]).
    pub fn propose(&mut self, state: &State, session: i64, time_ms: i64, origin: u64, what: Decide<'_>) -> Entry {
        let index = self.last_index + 1;
        let consumes = match what {
            Decide::CreateSession { .. } => state.rules.create_session_consumes_zxid,
            _ => true,
        };
        let zxid = self.last_zxid + i64::from(consumes);
        let at = At { zxid, time_ms };
        let txn = match what {
            Decide::Write { req: Request::Close, .. } => self.close(state, session, at, index),
            Decide::Write { req: Request::Multi(ops), auth } => {
                self.multi(state, ops, &Ctx { session, auth }, at, index)
            }
            Decide::Write { req, auth } => {
                let ctx = Ctx { session, auth };
                match decide(state, &self.view(state), req, &ctx) {
                    Ok(op) => {
                        stage(&mut self.staging(state, index), &state.rules, &op, at);
                        Txn::Ops(vec![op])
                    }
                    Err(e) => Txn::Failed(e),
                }
            }
            Decide::Noop => Txn::Noop,
            Decide::Fail(e) => Txn::Failed(e),
            Decide::CreateSession { timeout_ms, passwd } => {
                let mut id = self.next_session_id;
                // The container sentinel is never a session id (ZooKeeper skips it the same way).
                if id == CONTAINER_OWNER {
                    id += 1;
                }
                self.next_session_id = id + 1;
                let passwd = if state.rules.zookeeper_sessions { passwd } else { [0; 16] };
                Txn::CreateSession { id, timeout_ms, passwd }
            }
            Decide::CloseSession { id } => self.close(state, id, at, index),
        };
        self.pending.seal();
        self.last_index = index;
        self.last_zxid = zxid;
        let digest = state.tree.digest_enabled().then(|| (DIGEST_VERSION, self.pending.digest()));
        Entry { index, term: self.term, zxid, time_ms, session, txn, digest, origin }
    }

    fn staging<'a>(&'a mut self, state: &'a State, index: u64) -> Staging<'a> {
        Staging { tree: &state.tree, pending: &mut self.pending, index }
    }

    fn close(&mut self, state: &State, id: i64, at: At, index: u64) -> Txn {
        let ephemerals = close_order(state, &self.view(state), id);
        stage_close(&mut self.staging(state, index), &state.rules, id, &ephemerals, at);
        Txn::CloseSession { id, ephemerals }
    }

    /// Every op is decided against the view its predecessors left; the first failure undoes
    /// the multi's staged changes (and only its own) and fails it with the exact per-op vector:
    /// 0 before it, its code, RUNTIMEINCONSISTENCY after.
    fn multi(&mut self, state: &State, ops: &[Request], ctx: &Ctx<'_>, at: At, index: u64) -> Txn {
        let mark = self.pending.mark();
        let mut decided = Vec::with_capacity(ops.len());
        for (i, req) in ops.iter().enumerate() {
            match decide(state, &self.view(state), req, ctx) {
                Ok(op) => {
                    stage(&mut self.staging(state, index), &state.rules, &op, at);
                    decided.push(op);
                }
                Err(_) if self.partial_multi && i > 0 => {
                    // Broken on purpose: the ops before the failure stay (the reply still
                    // reports the multi as failed, see the server's reply shape).
                    return Txn::Ops(decided);
                }
                Err(e) => {
                    self.pending.rollback(mark);
                    let mut codes = vec![0; i];
                    codes.push(e.code());
                    codes.resize(ops.len(), ZkError::RuntimeInconsistency.code());
                    return Txn::MultiFailed(codes);
                }
            }
        }
        Txn::Ops(decided)
    }
}
