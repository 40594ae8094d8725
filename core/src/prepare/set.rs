//! setData and setACL.

use testkeeper_wire::records::acl::SetAclRequest;
use testkeeper_wire::records::data::SetDataRequest;
use testkeeper_wire::{perms, ZkError};

use super::view::{NodeView, View};
use super::{check_version, Ctx};
use crate::node::{AclList, NodeStat};
use crate::state::State;
use crate::txn::Op;
use crate::{acl, path};

pub(super) fn prepare_data(
    state: &State,
    view: &mut View<'_>,
    req: &SetDataRequest,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
    if path::validate(&req.path, &state.rules).is_err() && req.path != "/" {
        return Err(ZkError::BadArguments);
    }
    if state.is_reserved(&req.path) {
        return Err(ZkError::BadArguments);
    }
    let node = view.get(&req.path).ok_or(ZkError::NoNode)?;
    acl::check(&node.acl, ctx.auth, perms::WRITE)?;
    let version = check_version(node.stat.version, req.version)?;
    if state.rules.set_bumps_parent_cversion {
        if let Some((pp, _)) = path::split(&req.path) {
            if let Some(parent) = view.get(pp) {
                let cversion = parent.stat.cversion.wrapping_add(1);
                view.set(pp, Some(NodeView { stat: NodeStat { cversion, ..parent.stat }, ..parent }));
            }
        }
    }
    view.set(
        &req.path,
        Some(NodeView {
            stat: NodeStat { version, ..node.stat },
            data_len: req.data.as_ref().map_or(0, Vec::len) as i32,
            ..node
        }),
    );
    Ok(Op::SetData { path: req.path.clone(), data: req.data.clone(), version })
}

pub(super) fn prepare_acl(
    state: &State,
    view: &mut View<'_>,
    req: &SetAclRequest,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
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
    view.set(&req.path, Some(NodeView { stat: NodeStat { aversion, ..node.stat }, acl: acl.clone(), ..node }));
    Ok(Op::SetAcl { path: req.path.clone(), acl, aversion })
}
