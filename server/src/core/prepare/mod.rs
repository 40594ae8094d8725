//! `prepare`: validates a write against the committed tree plus pending changes and decides
//! everything the change needs (final path, owner, versions, parent cversion, session id).
//! It returns a [`Txn`]; it never mutates. One file per operation.

mod check;
mod create;
mod delete;
mod multi;
mod set;
pub mod view;

use testkeeper_wire::{Request, ZkError};

use super::acl::AuthId;
use super::state::State;
use super::txn::{Op, Txn};
use view::View;

/// Who is asking.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The requesting session (0 for internal requests such as the container reaper).
    pub session: i64,
    /// Identities the session has authenticated as.
    pub auth: &'a [AuthId],
}

impl State {
    /// Decides a client write. Reads are not prepared; see `read.rs`.
    pub fn prepare(&self, req: &Request, ctx: &Ctx<'_>) -> Txn {
        match req {
            Request::Multi(ops) => multi::prepare(self, ops, ctx),
            Request::Close => self.prepare_close_session(ctx.session),
            other => {
                let mut view = View::new(&self.tree);
                match prepare_op(self, &mut view, other, ctx) {
                    Ok(op) => Txn::Ops(vec![op]),
                    Err(e) => Txn::Failed(e),
                }
            }
        }
    }

    /// Decides a new session: its id comes from the state's counter, never from a clock.
    pub fn prepare_create_session(&self, timeout_ms: i32) -> Txn {
        let mut id = self.next_session_id;
        // The container sentinel is never a session id (ZooKeeper skips it the same way).
        if id == super::node::CONTAINER_OWNER {
            id += 1;
        }
        Txn::CreateSession { id, timeout_ms }
    }

    /// Decides the end of a session: lists the ephemerals to delete, ordered.
    pub fn prepare_close_session(&self, id: i64) -> Txn {
        let ephemerals = self.tree.ephemerals_of(id).map(str::to_string).collect();
        Txn::CloseSession { id, ephemerals }
    }
}

/// Prepares one write op against `view`, recording its effect there so later ops of the same
/// multi see it.
fn prepare_op(state: &State, view: &mut View<'_>, req: &Request, ctx: &Ctx<'_>) -> Result<Op, ZkError> {
    match req {
        Request::Create(c) => create::prepare(state, view, c, ctx),
        Request::Delete(d) => delete::prepare(state, view, &d.path, d.version, ctx),
        Request::TryRemove(d) => delete::prepare_try(state, view, &d.path, d.version, ctx),
        Request::RemoveRecursive(r) => delete::prepare_recursive(state, view, &r.path, r.limit, ctx),
        Request::SetData(s) => set::prepare_data(state, view, s, ctx),
        Request::SetAcl(s) => set::prepare_acl(state, view, s, ctx),
        Request::Check(c) => check::prepare_version(state, view, &c.path, c.version, ctx),
        Request::CheckNotExists(c) => check::prepare_not_exists(state, view, &c.path, c.version, ctx),
        Request::CheckStat(c) => check::prepare_stat(state, view, c, ctx),
        _ => Err(ZkError::BadArguments),
    }
}

/// `expected == -1` matches any version; returns the next version.
fn check_version(current: i32, expected: i32) -> Result<i32, ZkError> {
    if expected != -1 && expected != current {
        return Err(ZkError::BadVersion);
    }
    Ok(current.wrapping_add(1))
}
