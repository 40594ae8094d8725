//! The data tree: nodes by path, each parent's child names, indexes of ephemerals, containers and
//! TTL nodes, and the incrementally kept tree digest.
//!
//! Only `apply` (and startup, which creates the system nodes) calls the mutating methods; they
//! assert the invariants that `prepare` promised, and panic if one is broken.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use testkeeper_wire::Acl;

use super::digest::stored_node_digest;
use super::node::Node;
use super::path;

/// The tree and its indexes.
#[derive(Debug, Clone)]
pub struct Tree {
    nodes: HashMap<Box<str>, Node>,
    /// Wrapping sum of every node's digest (0 when the digest is disabled).
    digest: u64,
    digest_enabled: bool,
    ephemerals: HashMap<i64, BTreeSet<Box<str>>>,
    containers: BTreeSet<Box<str>>,
    ttls: BTreeSet<Box<str>>,
}

impl Tree {
    /// An empty tree holding only the root.
    pub fn new(digest_enabled: bool, root: Node) -> Tree {
        let mut t = Tree {
            nodes: HashMap::new(),
            digest: 0,
            digest_enabled,
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
        };
        t.nodes.insert("/".into(), root);
        t.refresh_digest("/");
        t
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Number of nodes, the root and system nodes included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: the root always exists. (Present for `len` symmetry.)
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The tree digest kept incrementally.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// Whether the digest is maintained.
    pub fn digest_enabled(&self) -> bool {
        self.digest_enabled
    }

    /// The digest recomputed from scratch, for checks against the incremental one.
    pub fn recompute_digest(&self) -> u64 {
        self.nodes.iter().fold(0u64, |acc, (p, n)| acc.wrapping_add(stored_node_digest(p, n)))
    }

    /// Every path, unordered.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(|k| &**k)
    }

    /// Ephemeral paths owned by `session`, ordered.
    pub fn ephemerals_of(&self, session: i64) -> impl Iterator<Item = &str> {
        self.ephemerals.get(&session).into_iter().flat_map(|s| s.iter().map(|p| &**p))
    }

    /// Sessions owning ephemerals, with their counts.
    pub fn ephemeral_owners(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        self.ephemerals.iter().map(|(s, set)| (*s, set.len()))
    }

    /// Total number of ephemerals.
    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(BTreeSet::len).sum()
    }

    /// Container node paths, ordered.
    pub fn containers(&self) -> impl Iterator<Item = &str> {
        self.containers.iter().map(|p| &**p)
    }

    /// TTL node paths, ordered.
    pub fn ttl_nodes(&self) -> impl Iterator<Item = &str> {
        self.ttls.iter().map(|p| &**p)
    }

    /// Approximate bytes of data and paths, for `mntr`.
    pub fn approximate_data_size(&self) -> usize {
        self.nodes.iter().map(|(p, n)| p.len() + n.data.len()).sum()
    }

    fn refresh_digest(&mut self, path: &str) {
        if !self.digest_enabled {
            return;
        }
        let node = self.nodes.get_mut(path).expect("refresh of a missing node");
        let new = stored_node_digest(path, node);
        self.digest = self.digest.wrapping_sub(node.digest).wrapping_add(new);
        node.digest = new;
    }

    /// Changes the node at `path` through `f` and refreshes its digest.
    ///
    /// # Panics
    /// When the node does not exist: `prepare` promised it did.
    pub fn modify(&mut self, path: &str, f: impl FnOnce(&mut Node)) {
        let node = self.nodes.get_mut(path).unwrap_or_else(|| panic!("invariant: modify of missing node {path}"));
        f(node);
        self.refresh_digest(path);
    }

    /// Inserts a new node and links it into its parent (the parent's stat is the caller's job).
    ///
    /// # Panics
    /// When the node exists or the parent does not.
    pub fn insert(&mut self, path: &str, node: Node) {
        let (parent, name) = path::split(path).unwrap_or_else(|| panic!("invariant: insert of root"));
        let p = self.nodes.get_mut(parent).unwrap_or_else(|| panic!("invariant: parent of {path} missing"));
        assert!(p.children.insert(name.into()), "invariant: {path} already a child");
        self.refresh_digest(parent);
        if node.is_ephemeral() {
            self.ephemerals.entry(node.stat.ephemeral_owner).or_default().insert(path.into());
        }
        if node.is_container() {
            self.containers.insert(path.into());
        }
        if node.is_ttl() {
            self.ttls.insert(path.into());
        }
        let prev = self.nodes.insert(path.into(), node);
        assert!(prev.is_none(), "invariant: create of existing node {path}");
        self.refresh_digest(path);
    }

    /// Removes a leaf node and unlinks it from its parent; returns it.
    ///
    /// # Panics
    /// When the node is missing or has children.
    pub fn remove(&mut self, path: &str) -> Node {
        let node = self.nodes.remove(path).unwrap_or_else(|| panic!("invariant: delete of missing node {path}"));
        assert!(node.children.is_empty(), "invariant: delete of non-empty node {path}");
        if self.digest_enabled {
            self.digest = self.digest.wrapping_sub(node.digest);
        }
        let (parent, name) = path::split(path).expect("root is never removed");
        let p = self.nodes.get_mut(parent).unwrap_or_else(|| panic!("invariant: parent of {path} missing"));
        assert!(p.children.remove(name), "invariant: {path} not linked");
        self.refresh_digest(parent);
        if node.is_ephemeral() {
            let owner = node.stat.ephemeral_owner;
            if let Some(set) = self.ephemerals.get_mut(&owner) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&owner);
                }
            }
        }
        if node.is_container() {
            self.containers.remove(path);
        }
        if node.is_ttl() {
            self.ttls.remove(path);
        }
        node
    }

    /// Startup only: inserts a system node with an all-zero stat, leaving the parent's stat alone
    /// (ZooKeeper and Keeper add them without counting a child change).
    pub fn insert_system(&mut self, path: &str, data: Vec<u8>, acl: Arc<[Acl]>) {
        let node = Node { data, acl, ..Node::default() };
        self.insert(path, node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Node {
        Node { acl: Acl::open().into(), ..Node::default() }
    }

    #[test]
    fn incremental_digest_equals_recompute() {
        let mut t = Tree::new(true, root());
        t.insert_system("/zookeeper", vec![], Acl::open().into());
        t.insert("/a", Node { data: b"x".to_vec(), acl: Acl::open().into(), ..Node::default() });
        t.modify("/a", |n| n.stat.version += 1);
        assert_eq!(t.digest(), t.recompute_digest());
        t.remove("/a");
        assert_eq!(t.digest(), t.recompute_digest());
        assert_eq!(t.len(), 2);
    }

    #[test]
    #[should_panic(expected = "invariant")]
    fn deleting_a_parent_with_children_panics() {
        let mut t = Tree::new(true, root());
        t.insert("/a", Node::default());
        t.insert("/a/b", Node::default());
        t.remove("/a");
    }
}
