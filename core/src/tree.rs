//! The data tree: nodes in an arena, each parent's child index, indexes of ephemerals,
//! containers and TTL nodes, and the incrementally kept tree digest.
//!
//! Only `apply` can call the mutating methods: each takes its [`Mutation`] witness. They
//! assert the invariants that the proposer promised, and panic if one is broken.
//!
//! Nodes live in a slot arena (`arena.rs`) and are found by walking the path from the root
//! through each parent's hash table of child slots (`Kids`). No full path is stored: a
//! path-keyed hash map cost a key string, a bucket with the node inline, and up to half its
//! buckets empty, for about 740 B per 100-byte znode (docs/performance.md). For the same
//! reason a node's digest is not cached in it: a write hashes the nodes it touches before and
//! after the change, and the tree digest moves by the difference.

mod node_ref;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use super::acl_table::AclTable;
use super::apply::Mutation;
use super::arena::Arena;
use super::node::{AclList, Kids, Node, NodeKind, NodeStat};
use super::path;

pub use node_ref::NodeRef;

/// Arena slot of the root.
const ROOT: u32 = 0;

/// The hash of a child name in its parent's table. Fixed-seeded, so a tree's layout (and the
/// order listings come in) is the same for the same history, in every run and replay.
fn name_hash(name: &str) -> u64 {
    FixedState::with_seed(0).hash_one(name)
}

/// A node to create, besides its path.
#[derive(Debug, Clone, Copy)]
pub struct NewNode<'a> {
    /// `None` = null data (see `stored_data`).
    pub data: Option<&'a [u8]>,
    pub acl: &'a AclList,
    pub stat: NodeStat,
    /// ephemeralOwner: a session id, `CONTAINER_OWNER` for a container, else 0.
    pub owner: i64,
    /// TTL in ms for a TTL node, else 0.
    pub ttl: i64,
}

/// The tree and its indexes.
#[derive(Debug, Clone)]
pub struct Tree {
    nodes: Arena,
    /// Child index by parent slot, for nodes that have or had children.
    kids: HashMap<u32, Kids, FixedState>,
    /// Owner by slot, for ephemerals only.
    owners: HashMap<u32, i64, FixedState>,
    len: usize,
    /// Sum over nodes of path length plus data length: `mntr`'s approximate_data_size, kept
    /// here because walking a million nodes for it held the engine's lock for a second.
    data_size: usize,
    /// Wrapping sum of every node's digest (0 when the digest is disabled).
    digest: u64,
    digest_enabled: bool,
    ephemerals: HashMap<i64, BTreeSet<Box<str>>, FixedState>,
    containers: BTreeSet<Box<str>>,
    /// TTL in ms by path: few nodes have one, so it is not a field of every node.
    ttls: BTreeMap<Box<str>, i64>,
    /// One shared copy of each distinct ACL list in use.
    acls: AclTable,
}

impl Tree {
    /// An empty tree holding only the root, with empty data, an all-zero stat and `root_acl`.
    pub fn new(digest_enabled: bool, root_acl: &AclList) -> Tree {
        let mut acls = AclTable::default();
        let root = Node::new("", Some(b""), acls.intern(root_acl), NodeStat::default(), NodeKind::Persistent);
        let mut nodes = Arena::default();
        assert_eq!(nodes.insert(root), ROOT);
        let mut t = Tree {
            nodes,
            kids: HashMap::default(),
            owners: HashMap::default(),
            len: 1,
            data_size: 1,
            digest: 0,
            digest_enabled,
            ephemerals: HashMap::default(),
            containers: BTreeSet::new(),
            ttls: BTreeMap::new(),
            acls,
        };
        t.digest = t.node_digest("/", ROOT);
        t
    }

    fn at(&self, id: u32) -> NodeRef<'_> {
        NodeRef { tree: self, id, node: self.nodes.node(id) }
    }

    /// The slot of the child `name` of the node in slot `parent`.
    fn child_id(&self, parent: u32, name: &str) -> Option<u32> {
        let kids = self.kids.get(&parent)?;
        kids.table.find(name_hash(name), |&c| self.nodes.node(c).name() == name).copied()
    }

    /// The arena slot of `path`: exactly the stored paths resolve (no normalisation), as with
    /// a path-keyed map, so "/a/" or "a" find nothing.
    fn id_of(&self, path: &str) -> Option<u32> {
        let rest = path.strip_prefix('/')?;
        if rest.is_empty() {
            return Some(ROOT);
        }
        rest.split('/').try_fold(ROOT, |id, name| self.child_id(id, name))
    }

    /// Every live node with its path, parents before children.
    fn walk(&self, mut f: impl FnMut(&str, NodeRef<'_>)) {
        let mut stack = vec![(String::from("/"), ROOT)];
        while let Some((p, id)) = stack.pop() {
            let n = self.at(id);
            f(&p, n);
            stack.extend(n.children_unordered().map(|c| (path::join(&p, c.name()), c.id)));
        }
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<NodeRef<'_>> {
        self.id_of(path).map(|id| self.at(id))
    }

    /// Number of nodes, the root and system nodes included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: the root always exists. (Present for `len` symmetry.)
    pub fn is_empty(&self) -> bool {
        self.len == 0
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
        let mut acc = 0u64;
        self.walk(|p, n| acc = acc.wrapping_add(n.digest(p)));
        acc
    }

    /// Every path, unordered.
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.len);
        self.walk(|p, _| out.push(p.to_string()));
        out
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

    /// TTL nodes with their TTL in ms, ordered by path.
    pub fn ttl_nodes(&self) -> impl Iterator<Item = (&str, i64)> {
        self.ttls.iter().map(|(p, t)| (&**p, *t))
    }

    /// The TTL of the node at `path` in ms, 0 if it is not a TTL node.
    pub fn ttl_of(&self, path: &str) -> i64 {
        if self.ttls.is_empty() {
            return 0;
        }
        self.ttls.get(path).copied().unwrap_or(0)
    }

    /// Approximate bytes of data and paths, for `mntr`.
    pub fn approximate_data_size(&self) -> usize {
        self.data_size
    }

    /// [`approximate_data_size`](Self::approximate_data_size) by walking every node.
    pub fn recompute_data_size(&self) -> usize {
        let mut size = 0;
        self.walk(|p, n| size += p.len() + n.data().len());
        size
    }

    /// The digest of the node at `path` in slot `id` as it is now (0 when the digest is off).
    fn node_digest(&self, path: &str, id: u32) -> u64 {
        if !self.digest_enabled {
            return 0;
        }
        self.at(id).digest(path)
    }

    /// Moves the tree digest from `old` to the current digest of the node at `path`.
    fn redigest(&mut self, path: &str, id: u32, old: u64) {
        if self.digest_enabled {
            self.digest = self.digest.wrapping_sub(old).wrapping_add(self.node_digest(path, id));
        }
    }

    /// Changes the stat of the node at `path` through `f` and updates the digest, hashing the
    /// path and data once for the old digest and the new.
    ///
    /// # Panics
    /// When the node does not exist.
    pub(crate) fn modify_stat(&mut self, _: &Mutation, path: &str, f: impl FnOnce(&mut NodeStat)) {
        let id = self.id_of(path).unwrap_or_else(|| panic!("invariant: modify of missing node {path}"));
        self.restat(path, id, |t| f(&mut t.nodes.node_mut(id).stat));
    }

    /// Runs `f`, which changes only stat fields of the node in slot `id` (its own, its
    /// children count), and moves the digest by the difference.
    fn restat(&mut self, path: &str, id: u32, f: impl FnOnce(&mut Tree)) {
        if !self.digest_enabled {
            return f(self);
        }
        let prefix = self.at(id).digest_prefix(path);
        let old = prefix.finish(&self.at(id).digest_fields(path));
        f(self);
        let new = prefix.finish(&self.at(id).digest_fields(path));
        self.digest = self.digest.wrapping_sub(old).wrapping_add(new);
    }

    /// Changes the node at `path` through `f` and updates the digest. `f` must not rename
    /// the node (its name is its place in the parent's table).
    ///
    /// # Panics
    /// When the node does not exist: `prepare` promised it did.
    pub(crate) fn modify(&mut self, _: &Mutation, path: &str, f: impl FnOnce(&mut Node)) {
        let id = self.id_of(path).unwrap_or_else(|| panic!("invariant: modify of missing node {path}"));
        let old = self.node_digest(path, id);
        let old_len = self.nodes.node(id).data().len();
        f(self.nodes.node_mut(id));
        self.data_size = self.data_size - old_len + self.nodes.node(id).data().len();
        self.redigest(path, id, old);
    }

    /// Gives the node at `path` the ACL list `acl` (not covered by the digest).
    ///
    /// # Panics
    /// When the node does not exist.
    pub(crate) fn set_acl(&mut self, _: &Mutation, path: &str, acl: &AclList) {
        let id = self.id_of(path).unwrap_or_else(|| panic!("invariant: setACL of missing node {path}"));
        let new = self.acls.intern(acl);
        let node = self.nodes.node_mut(id);
        let old = std::mem::replace(&mut node.acl, new);
        self.acls.release(old);
    }

    /// Creates the node at `path`, links it into its parent and counts it in the parent's
    /// sequential counter (the parent's stat is the caller's job).
    ///
    /// # Panics
    /// When the node exists or the parent does not.
    pub(crate) fn insert(&mut self, _: &Mutation, path: &str, new: NewNode<'_>) {
        self.insert_counted(path, new, true);
    }

    /// Creates a node without counting it in the parent's sequential counter: system nodes at
    /// startup, and nodes restored from a snapshot (whose counters are restored as stored).
    pub(crate) fn insert_uncounted(&mut self, _: &Mutation, path: &str, new: NewNode<'_>) {
        self.insert_counted(path, new, false);
    }

    /// Restores the sequential-suffix counter of the node at `path`.
    ///
    /// # Panics
    /// When the node does not exist.
    pub(crate) fn set_seq(&mut self, _: &Mutation, path: &str, seq: i64) {
        let id = self.id_of(path).unwrap_or_else(|| panic!("invariant: counter of missing node {path}"));
        if seq != 0 || self.kids.contains_key(&id) {
            self.kids.entry(id).or_default().seq = seq;
        }
    }

    fn insert_counted(&mut self, path: &str, new: NewNode<'_>, seq: bool) {
        let NewNode { data, acl, stat, owner, ttl } = new;
        let (parent, name) = path::split(path).unwrap_or_else(|| panic!("invariant: insert of root"));
        let pid = self.id_of(parent).unwrap_or_else(|| panic!("invariant: parent of {path} missing"));
        assert!(self.child_id(pid, name).is_none(), "invariant: {path} already a child");
        let node = Node::new(name, data, self.acls.intern(acl), stat, NodeKind::of_owner(owner));
        let (ephemeral, container) = (node.is_ephemeral(), node.is_container());
        let id = self.nodes.insert(node);
        if ephemeral {
            self.owners.insert(id, owner);
        }
        self.len += 1;
        self.data_size += path.len() + self.nodes.node(id).data().len();
        self.restat(parent, pid, |t| {
            let nodes = &t.nodes;
            let kids = t.kids.entry(pid).or_default();
            kids.table.insert_unique(name_hash(name), id, |&c| name_hash(nodes.node(c).name()));
            kids.seq += i64::from(seq);
        });
        if ephemeral {
            self.ephemerals.entry(owner).or_default().insert(path.into());
        }
        if container {
            self.containers.insert(path.into());
        }
        if ttl > 0 {
            self.ttls.insert(path.into(), ttl);
        }
        self.redigest(path, id, 0);
    }

    /// Removes a leaf node and unlinks it from its parent; returns it.
    ///
    /// # Panics
    /// When the node is missing or has children.
    pub(crate) fn remove(&mut self, _: &Mutation, path: &str) -> Node {
        let found = path::split(path).and_then(|(parent, name)| {
            let pid = self.id_of(parent)?;
            Some((parent, name, pid, self.child_id(pid, name)?))
        });
        let (parent, name, pid, id) = found.unwrap_or_else(|| panic!("invariant: delete of missing node {path}"));
        assert_eq!(self.at(id).num_children(), 0, "invariant: delete of non-empty node {path}");
        let old = self.node_digest(path, id);
        self.restat(parent, pid, |t| {
            let nodes = &t.nodes;
            let kids = t.kids.get_mut(&pid).expect("invariant: a parent of a child has a child index");
            let entry = kids.table.find_entry(name_hash(name), |&c| nodes.node(c).name() == name);
            entry.unwrap_or_else(|_| panic!("invariant: {path} is in its parent's index")).remove();
            if kids.table.is_empty() && kids.seq == 0 {
                t.kids.remove(&pid);
            }
        });
        // The node's own (empty) index goes with it: its sequential counter must not pass to
        // whatever node takes the slot next.
        self.kids.remove(&id);
        let node = self.nodes.remove(id);
        self.len -= 1;
        self.data_size -= path.len() + node.data().len();
        self.acls.release(node.acl);
        self.digest = self.digest.wrapping_sub(old);
        if node.is_ephemeral() {
            let owner = self.owners.remove(&id).expect("invariant: an ephemeral's owner is kept");
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
        self.ttls.remove(path);
        node
    }
}

#[cfg(test)]
mod tests;
