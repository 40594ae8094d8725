//! check (version), and Keeper's checkNotExists and checkStat. They change nothing; inside a
//! multi a failed check fails the whole multi.

use testkeeper_wire::records::keeper_ext::CheckStatRequest;
use testkeeper_wire::{perms, ZkError};

use super::Ctx;
use crate::acl;
use crate::pending::View;
use crate::state::State;
use crate::txn::Op;

pub(super) fn prepare_version(
    _state: &State,
    view: &View<'_>,
    path: &str,
    version: i32,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
    let node = view.get(path).ok_or(ZkError::NoNode)?;
    acl::check(&node.acl, ctx.auth, perms::READ)?;
    if version != -1 && version != node.stat.version {
        return Err(ZkError::BadVersion);
    }
    Ok(Op::Check { path: path.to_string() })
}

/// NODEEXISTS when the node exists with the given version (or any, for -1).
pub(super) fn prepare_not_exists(
    state: &State,
    view: &View<'_>,
    path: &str,
    version: i32,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
    if state.is_reserved(path) {
        return Err(ZkError::BadArguments);
    }
    if let Some(node) = view.get(path) {
        acl::check(&node.acl, ctx.auth, perms::READ)?;
        if version == -1 || version == node.stat.version {
            return Err(ZkError::NodeExists);
        }
    }
    Ok(Op::Check { path: path.to_string() })
}

/// Every stat field that is not -1 must equal the node's; BADVERSION otherwise.
pub(super) fn prepare_stat(
    state: &State,
    view: &View<'_>,
    req: &CheckStatRequest,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
    if state.is_reserved(&req.path) {
        return Err(ZkError::BadArguments);
    }
    let node = view.get(&req.path).ok_or(ZkError::NoNode)?;
    acl::check(&node.acl, ctx.auth, perms::READ)?;
    let s = &node.stat;
    let want = &req.stat;
    let i64_ok = |w: i64, have: i64| w == -1 || w == have;
    let i32_ok = |w: i32, have: i32| w == -1 || w == have;
    let matches = i32_ok(req.version, s.version)
        && i64_ok(want.czxid, s.czxid)
        && i64_ok(want.mzxid, s.mzxid)
        && i64_ok(want.ctime, s.ctime)
        && i64_ok(want.mtime, s.mtime)
        && i32_ok(want.version, s.version)
        && i32_ok(want.cversion, s.cversion)
        && i32_ok(want.aversion, s.aversion)
        && i64_ok(want.ephemeral_owner, node.owner)
        && i32_ok(want.data_length, node.data_len)
        && i32_ok(want.num_children, node.num_children)
        && i64_ok(want.pzxid, s.pzxid);
    if !matches {
        return Err(ZkError::BadVersion);
    }
    Ok(Op::Check { path: req.path.clone() })
}
