//! setData and setACL.

use testkeeper_wire::records::acl::SetAclRequest;
use testkeeper_wire::records::data::SetDataRequest;
use testkeeper_wire::{perms, ZkError};

use super::{check_version, Ctx};
use crate::node::AclList;
use crate::pending::View;
use crate::state::State;
use crate::txn::Op;
use crate::{acl, path};

pub(super) fn prepare_data(state: &State, view: &View<'_>, req: &SetDataRequest, ctx: &Ctx<'_>) -> Result<Op, ZkError> {
    if path::validate(&req.path, &state.rules).is_err() && req.path != "/" {
        return Err(ZkError::BadArguments);
    }
    if state.is_reserved(&req.path) {
        return Err(ZkError::BadArguments);
    }
    let node = view.get(&req.path).ok_or(ZkError::NoNode)?;
    acl::check(&node.acl, ctx.auth, perms::WRITE)?;
    let version = check_version(node.stat.version, req.version)?;
    Ok(Op::SetData { path: req.path.clone(), data: req.data.clone(), version })
}

pub(super) fn prepare_acl(state: &State, view: &View<'_>, req: &SetAclRequest, ctx: &Ctx<'_>) -> Result<Op, ZkError> {
    if path::validate(&req.path, &state.rules).is_err() {
        return Err(ZkError::BadArguments);
    }
    if state.is_reserved(&req.path) {
        return Err(ZkError::BadArguments);
    }
    let acl_list = acl::fixup(&req.acl, ctx.auth, state.rules.ip_acl_scheme)?;
    let node = view.get(&req.path).ok_or(ZkError::NoNode)?;
    acl::check(&node.acl, ctx.auth, perms::ADMIN)?;
    let aversion = check_version(node.stat.aversion, req.version)?;
    let acl: AclList = std::sync::Arc::new(acl_list);
    Ok(Op::SetAcl { path: req.path.clone(), acl, aversion })
}
