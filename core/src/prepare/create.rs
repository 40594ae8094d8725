//! create, create2, createContainer, createTTL and Keeper's createIfNotExists.
//! Check order follows ZooKeeper's `PrepRequestProcessor.pRequest2TxnCreate`.

use std::sync::Arc;

use testkeeper_wire::records::create::CreateMode;
use testkeeper_wire::{perms, CreateOp, OpCode, ZkError};

use super::Ctx;
use crate::node::{AclList, CONTAINER_OWNER};
use crate::pending::View;
use crate::state::State;
use crate::txn::{CreateTxn, Op};
use crate::{acl, path};

/// Largest TTL ZooKeeper accepts (`EphemeralType.TTL.maxValue()`).
const MAX_TTL_MS: i64 = 0x00FF_FFFF_FFFF;

pub(super) fn prepare(state: &State, view: &View<'_>, c: &CreateOp, ctx: &Ctx<'_>) -> Result<Op, ZkError> {
    let req = &c.req;
    let mode = CreateMode::from_flags(req.flags).ok_or(ZkError::BadArguments)?;
    let if_not_exists = c.op == OpCode::CreateIfNotExists;
    // TTL: only through createTTL with a TTL mode and a TTL in range, and vice versa.
    let ttl = match (c.op == OpCode::CreateTtl, mode.ttl) {
        (true, true) if c.ttl > 0 && c.ttl <= MAX_TTL_MS => c.ttl,
        (false, false) => 0,
        _ => return Err(ZkError::BadArguments),
    };
    // The op, not the flag, makes a container: ZooKeeper builds a CreateContainerTxn for op 19
    // whatever the flags say, and a plain create with the container flag makes a persistent
    // node (measured on 3.8.0).
    let container = c.op == OpCode::CreateContainer;
    if if_not_exists && mode.sequential {
        return Err(ZkError::BadArguments);
    }
    let last_slash = req.path.rfind('/').ok_or(ZkError::BadArguments)?;
    if req.path.contains('\0') {
        return Err(ZkError::BadArguments);
    }
    let parent_path = if last_slash == 0 { "/" } else { &req.path[..last_slash] };
    if state.is_reserved(&req.path) {
        return Err(ZkError::BadArguments);
    }
    let acl = acl::fixup(&req.acl, ctx.auth, state.rules.ip_acl_scheme)?;
    let parent = view.get(parent_path).ok_or(ZkError::NoNode)?;
    acl::check(&parent.acl, ctx.auth, perms::CREATE)?;
    let full_path =
        if mode.sequential { format!("{}{}", req.path, state.rules.seq_suffix(parent.seq)) } else { req.path.clone() };
    path::validate(&full_path, &state.rules).map_err(|_| ZkError::BadArguments)?;
    if view.get(&full_path).is_some() {
        if if_not_exists {
            return Ok(Op::Nothing { path: full_path });
        }
        return Err(ZkError::NodeExists);
    }
    if parent.is_ephemeral() {
        return Err(ZkError::NoChildrenForEphemerals);
    }
    if parent.ttl > 0 && state.rules.ttl_nodes_refuse_children {
        return Err(ZkError::BadArguments);
    }
    let ephemeral_owner = if container {
        CONTAINER_OWNER
    } else if mode.ephemeral {
        if ctx.session == 0 {
            return Err(ZkError::BadArguments);
        }
        ctx.session
    } else {
        0
    };
    let parent_cversion = parent.stat.cversion.wrapping_add(1);
    let acl: AclList = Arc::new(acl);
    Ok(Op::Create(CreateTxn { path: full_path, data: req.data.clone(), acl, ephemeral_owner, ttl, parent_cversion }))
}
