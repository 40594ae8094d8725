//! The view `prepare` validates against: the committed tree plus the pending changes of the
//! ops decided so far in the same multi. Nothing here mutates the tree; dropping the view is
//! the rollback of a failed multi.

use crate::node::{AclList, NodeStat, CONTAINER_OWNER};
use crate::tree::Tree;
use std::collections::HashMap;

/// What prepare needs to know of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    pub stat: NodeStat,
    /// ephemeralOwner: the session of an ephemeral, `CONTAINER_OWNER` for a container, else 0.
    pub owner: i64,
    pub acl: AclList,
    pub num_children: i32,
    pub seq: i64,
    pub ttl: i64,
    pub data_len: i32,
}

impl NodeView {
    /// Whether the node is a session ephemeral (which cannot have children).
    pub fn is_ephemeral(&self) -> bool {
        self.owner != 0 && self.owner != CONTAINER_OWNER
    }
}

/// Committed tree + pending changes.
pub struct View<'a> {
    tree: &'a Tree,
    pending: HashMap<String, Option<NodeView>>,
}

impl<'a> View<'a> {
    /// A view with nothing pending.
    pub fn new(tree: &'a Tree) -> Self {
        View { tree, pending: HashMap::new() }
    }

    /// The node at `path` as the ops so far would leave it.
    pub fn get(&self, path: &str) -> Option<NodeView> {
        if let Some(p) = self.pending.get(path) {
            return p.clone();
        }
        self.tree.get(path).map(|n| NodeView {
            stat: n.stat,
            owner: n.owner(),
            acl: n.acl().clone(),
            num_children: n.num_children() as i32,
            seq: n.seq(),
            ttl: self.tree.ttl_of(path),
            data_len: n.data().len() as i32,
        })
    }

    /// Records the node's pending state (`None` = deleted).
    pub fn set(&mut self, path: &str, node: Option<NodeView>) {
        self.pending.insert(path.to_string(), node);
    }

    /// Committed children of `path` that are not pending deletion (for removeRecursive).
    pub fn committed_children(&self, path: &str) -> Vec<String> {
        let Some(n) = self.tree.get(path) else { return Vec::new() };
        n.children()
            .into_iter()
            .map(|c| crate::path::join(path, c.name()))
            .filter(|p| !matches!(self.pending.get(p), Some(None)))
            .collect()
    }
}
