//! delete, and Keeper's tryRemove and removeRecursive.
//! Check order follows ZooKeeper: path, parent, DELETE on the parent, node, version, children.

use std::collections::VecDeque;

use testkeeper_wire::{perms, ZkError};

use super::{check_version, Ctx};
use crate::pending::View;
use crate::state::State;
use crate::txn::Op;
use crate::{acl, path};

fn parent_of(path: &str) -> Result<&str, ZkError> {
    path::split(path).map(|(p, _)| p).ok_or(ZkError::BadArguments)
}

pub(super) fn prepare(state: &State, view: &View<'_>, path: &str, version: i32, ctx: &Ctx<'_>) -> Result<Op, ZkError> {
    if path.contains('\0') || state.is_special_path(path) || state.is_reserved(path) {
        return Err(ZkError::BadArguments);
    }
    let parent_path = parent_of(path)?;
    let parent = view.get(parent_path).ok_or(ZkError::NoNode)?;
    acl::check(&parent.acl, ctx.auth, perms::DELETE)?;
    let node = view.get(path).ok_or(ZkError::NoNode)?;
    check_version(node.stat.version, version)?;
    if node.num_children > 0 {
        return Err(ZkError::NotEmpty);
    }
    Ok(Op::Delete { path: path.to_string() })
}

/// tryRemove: like delete, but an absent node, a version mismatch or children mean "nothing to do".
pub(super) fn prepare_try(
    state: &State,
    view: &View<'_>,
    path: &str,
    version: i32,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
    if state.is_reserved(path) || state.is_special_path(path) {
        return Err(ZkError::BadArguments);
    }
    let nothing = Ok(Op::Nothing { path: path.to_string() });
    let parent_path = parent_of(path)?;
    let Some(parent) = view.get(parent_path) else { return nothing };
    acl::check(&parent.acl, ctx.auth, perms::DELETE)?;
    let Some(node) = view.get(path) else { return nothing };
    if (version != -1 && version != node.stat.version) || node.num_children > 0 {
        return nothing;
    }
    Ok(Op::Delete { path: path.to_string() })
}

/// removeRecursive: the node and its subtree, at most `limit` nodes in all (the target
/// included), children first; NOTEMPTY when over the limit. Uncommitted descendants count,
/// nodes created earlier in the same multi included, as Keeper's `ToDeleteTreeCollector`
/// walks its uncommitted state too.
pub(super) fn prepare_recursive(
    state: &State,
    view: &View<'_>,
    path: &str,
    limit: u32,
    ctx: &Ctx<'_>,
) -> Result<Op, ZkError> {
    if path == "/" || state.is_reserved(path) || state.is_special_path(path) {
        return Err(ZkError::BadArguments);
    }
    let nothing = Ok(Op::Nothing { path: path.to_string() });
    let parent_path = parent_of(path)?;
    let Some(parent) = view.get(parent_path) else { return nothing };
    acl::check(&parent.acl, ctx.auth, perms::DELETE)?;
    let Some(_) = view.get(path) else { return nothing };
    // Breadth-first walk, as Keeper does; every visited node needs DELETE for its children.
    let mut order = vec![path.to_string()];
    let mut queue = VecDeque::from([path.to_string()]);
    while let Some(p) = queue.pop_front() {
        let node = view.get(&p).ok_or(ZkError::NoNode)?;
        let children = view.children(&p);
        if !children.is_empty() {
            acl::check(&node.acl, ctx.auth, perms::DELETE)?;
            if order.len() + children.len() > limit as usize {
                return Err(ZkError::NotEmpty);
            }
        }
        for c in children {
            order.push(c.clone());
            queue.push_back(c);
        }
    }
    // Children before parents: reverse breadth-first order.
    order.reverse();
    Ok(Op::DeleteMany { paths: order })
}
