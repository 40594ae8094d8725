//! `NodeRef`: a node of the tree together with what the tree keeps beside it (its children,
//! its ACL list, an ephemeral's owner), so readers see one node and never the side tables.

use std::ops::Deref;

use testkeeper_wire::Stat;

use super::Tree;
use crate::digest::{DigestPrefix, StatFields};
use crate::node::{AclList, Node, NodeKind, CONTAINER_OWNER};

/// A node of a tree, with what the tree keeps beside it (children, ACL list). Derefs to the
/// node itself.
#[derive(Debug, Clone, Copy)]
pub struct NodeRef<'a> {
    pub(super) tree: &'a Tree,
    pub(super) id: u32,
    pub(super) node: &'a Node,
}

impl<'a> Deref for NodeRef<'a> {
    type Target = Node;

    fn deref(&self) -> &Node {
        self.node
    }
}

impl<'a> NodeRef<'a> {
    /// The Keeper digest of this node at `path`, with what the tree keeps beside it (owner,
    /// number of children, TTL). The fields are those a client reads, container owner included.
    pub fn digest(&self, path: &str) -> u64 {
        self.digest_prefix(path).finish(&self.digest_fields(path))
    }

    /// The digest's hash state after this node's path and data.
    pub fn digest_prefix(&self, path: &str) -> DigestPrefix {
        DigestPrefix::new(path, self.data())
    }

    /// The digest's fields after the path and data, as the node stands.
    pub fn digest_fields(&self, path: &str) -> StatFields {
        StatFields::new(&self.stat, self.owner(), self.num_children() as i32, self.tree.ttl_of(path))
    }

    /// Number of children.
    pub fn num_children(&self) -> usize {
        self.tree.kids.get(&self.id).map_or(0, |k| k.table.len())
    }

    /// Children ever created under this node: the sequential-suffix counter.
    pub fn seq(&self) -> i64 {
        self.tree.kids.get(&self.id).map_or(0, |k| k.seq)
    }

    /// The node's ACL list.
    pub fn acl(&self) -> &'a AclList {
        self.tree.acls.get(self.node.acl)
    }

    /// The session owning this ephemeral, `CONTAINER_OWNER` for a container, else 0.
    pub fn owner(&self) -> i64 {
        match self.node.kind() {
            NodeKind::Persistent => 0,
            NodeKind::Container => CONTAINER_OWNER,
            NodeKind::Ephemeral => *self.tree.owners.get(&self.id).expect("invariant: an ephemeral's owner is kept"),
        }
    }

    /// The stat a client reads (see `Node::client_stat_with`).
    pub fn client_stat(&self, hide_special_owners: bool) -> Stat {
        self.node.client_stat_with(self.owner(), self.num_children(), hide_special_owners)
    }

    /// The children, ordered by name as `str` orders (for the rare walks whose order shows:
    /// recursive listing under a limit, recursive removal).
    pub fn children(&self) -> Vec<NodeRef<'a>> {
        let mut out: Vec<NodeRef<'a>> = self.children_unordered().collect();
        out.sort_unstable_by(|a, b| a.name().cmp(b.name()));
        out
    }

    /// The children in table order: arbitrary, but the same for the same history. What
    /// listings return (docs/flavors.md).
    pub fn children_unordered(&self) -> impl Iterator<Item = NodeRef<'a>> + 'a {
        let tree = self.tree;
        tree.kids.get(&self.id).into_iter().flat_map(move |k| k.table.iter().map(move |&c| tree.at(c)))
    }
}
