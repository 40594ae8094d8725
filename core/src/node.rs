//! One znode as the server stores it, and the child index each parent keeps.
//!
//! Memory per znode is a target (issue 7), so the layout is deliberate (a test pins it at 64
//! bytes): the stat (without the ephemeral owner), a 4-byte index into the tree's interned ACL
//! lists, and one thin pointer to the name, data and kind in a single allocation (`Blob`).
//! What only some nodes have is kept by the tree beside them: a parent's children (a hash
//! table of arena slots whose names are read from the children themselves), an ephemeral's
//! owner, a TTL; and the digest is recomputed rather than cached.

use std::sync::Arc;

use hashbrown::HashTable;
use testkeeper_wire::{Acl, Stat};

use super::blob::Blob;

/// An ACL list as requests carry it and the tree interns it: shared, and one word wide.
pub type AclList = Arc<Vec<Acl>>;

/// Which of the tree's interned ACL lists a node uses (`Tree::acl` resolves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AclId(pub(crate) u32);

/// The ephemeralOwner sentinel of container nodes (ZooKeeper `EphemeralType.CONTAINER_EPHEMERAL_OWNER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// The persisted part of a node's stat that every node stores. `dataLength` and `numChildren`
/// are derived from the node, and `ephemeralOwner` only ephemerals have: the tree keeps it
/// beside them (`NodeRef::owner`), and `NodeKind` says which nodes those are.
///
/// Packed to 4-byte alignment (52 bytes, not 56): no field is ever borrowed, only read and
/// written by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C, packed(4))]
pub struct NodeStat {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    /// Client-visible cversion (child creates + deletes, offset by the flavor's initial value).
    pub cversion: i32,
    pub aversion: i32,
    pub pzxid: i64,
}

/// What kind of node, by its ephemeral owner: fixed at create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Persistent = 0,
    /// Owned by a session; the owner is kept by the tree.
    Ephemeral = 1,
    /// A container (owner `CONTAINER_OWNER`).
    Container = 2,
}

impl NodeKind {
    /// The kind of a node created with ephemeralOwner `owner` (session id, `CONTAINER_OWNER`
    /// or 0).
    pub fn of_owner(owner: i64) -> NodeKind {
        match owner {
            0 => NodeKind::Persistent,
            CONTAINER_OWNER => NodeKind::Container,
            _ => NodeKind::Ephemeral,
        }
    }
}

/// A znode: what every node pays for. Its children (and its sequential counter) and an
/// ephemeral's owner are kept by the tree, beside the few nodes that have them; its digest is
/// recomputed when it changes.
#[derive(Debug, Clone)]
pub struct Node {
    pub stat: NodeStat,
    /// The node's ACL list, interned by the tree (most trees use a handful of distinct ones).
    pub(crate) acl: AclId,
    /// The node's own name (last path segment), its data, and its kind.
    blob: Blob,
}

/// What a write leaves as a node's data: `None` (null) only when the flavor keeps null apart
/// from empty (`Rules::preserve_null_data`).
pub fn stored_data(data: Option<&[u8]>, keep_null: bool) -> Option<&[u8]> {
    if keep_null {
        data
    } else {
        Some(data.unwrap_or_default())
    }
}

impl Node {
    /// A node named `name` (`None` data = null, see `stored_data`) of `kind`.
    pub(crate) fn new(name: &str, data: Option<&[u8]>, acl: AclId, stat: NodeStat, kind: NodeKind) -> Node {
        Node { stat, acl, blob: Blob::new(name, data, kind as u8) }
    }

    /// The last segment of the node's path (empty for the root).
    pub fn name(&self) -> &str {
        self.blob.name()
    }

    /// The data; empty when null.
    pub fn data(&self) -> &[u8] {
        self.blob.data()
    }

    /// Whether the data was written as null (and kept so): the zookeeper flavor answers
    /// getData of such a node with a null buffer.
    pub fn data_is_null(&self) -> bool {
        self.blob.is_null()
    }

    /// Replaces the data (`None` = null, see `stored_data`).
    pub fn set_data(&mut self, data: Option<&[u8]>) {
        self.blob = Blob::new(self.blob.name(), data, self.blob.kind());
    }

    /// Persistent, ephemeral or container.
    pub fn kind(&self) -> NodeKind {
        match self.blob.kind() {
            0 => NodeKind::Persistent,
            1 => NodeKind::Ephemeral,
            2 => NodeKind::Container,
            k => unreachable!("invariant: node kind {k} was never stored"),
        }
    }

    /// Whether this is a (session) ephemeral.
    pub fn is_ephemeral(&self) -> bool {
        self.kind() == NodeKind::Ephemeral
    }

    /// Whether this is a container node.
    pub fn is_container(&self) -> bool {
        self.kind() == NodeKind::Container
    }

    /// The stat a client reads, given what the tree keeps beside the node (`NodeRef::client_stat`
    /// supplies them). `hide_special_owners` reports 0 for container nodes, as ZooKeeper does.
    pub fn client_stat_with(&self, owner: i64, num_children: usize, hide_special_owners: bool) -> Stat {
        let s = &self.stat;
        let owner = if hide_special_owners && self.is_container() { 0 } else { owner };
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: owner,
            data_length: self.data().len() as i32,
            num_children: num_children as i32,
            pzxid: s.pzxid,
        }
    }
}

/// A parent's children, as arena slots in a hash table keyed by the child's name (which the
/// child itself stores), and the sequential counter. Kept by the tree for nodes that have (or
/// had) children: nearly every znode is a leaf and pays nothing for this.
///
/// The table stores 4 bytes a child (plus a control byte and spare capacity) where an ordered
/// map of names cost about 45; listings come in table order (`Tree::children_unordered`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Kids {
    pub(crate) table: HashTable<u32>,
    /// Children ever created: the sequential-suffix counter, kept apart from cversion.
    pub(crate) seq: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_stays_small() {
        // Memory per znode is a target (issue 7): a field added here is paid a million times.
        assert_eq!(std::mem::size_of::<NodeStat>(), 52);
        assert_eq!(std::mem::size_of::<Option<Node>>(), 64);
    }

    #[test]
    fn set_data_keeps_the_name_and_null_is_kept_only_when_asked() {
        let kind = NodeKind::of_owner(7);
        let mut n = Node::new("n1", stored_data(None, false), AclId(0), NodeStat::default(), kind);
        assert!(n.is_ephemeral());
        assert!(!n.data_is_null());
        n.set_data(stored_data(None, true));
        assert!(n.data_is_null());
        assert_eq!(n.data(), b"");
        n.set_data(Some(b"abc"));
        assert_eq!((n.name(), n.data(), n.data_is_null()), ("n1", &b"abc"[..], false));
        assert_eq!(n.client_stat_with(7, 0, true).data_length, 3);
        assert!(n.is_ephemeral(), "set_data keeps the kind");
        let c = Node::new("c", None, AclId(0), NodeStat::default(), NodeKind::of_owner(CONTAINER_OWNER));
        assert_eq!((c.kind(), c.client_stat_with(CONTAINER_OWNER, 0, true).ephemeral_owner), (NodeKind::Container, 0));
    }
}
