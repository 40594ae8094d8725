//! The data tree: nodes in an arena, each parent's child names, indexes of ephemerals,
//! containers and TTL nodes, and the incrementally kept tree digest.
//!
//! Only `apply` (and startup, which creates the system nodes) calls the mutating methods; they
//! assert the invariants that `prepare` promised, and panic if one is broken.
//!
//! Nodes live in a `Vec` slot arena and are found by walking the path from the root through
//! each parent's ordered child map. No full path is stored: a path-keyed hash map cost a key
//! string, a bucket with the node inline, and up to half its buckets empty, for about 740 B
//! per 100-byte znode (docs/performance.md). Lookups cost one B-tree search per path segment.

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use testkeeper_wire::Acl;

use super::digest::stored_node_digest;
use super::node::Node;
use super::path;

/// Arena slot of the root.
const ROOT: u32 = 0;

/// The tree and its indexes.
#[derive(Debug, Clone)]
pub struct Tree {
    /// `None` marks a free slot (listed in `free`).
    slots: Vec<Option<Node>>,
    free: Vec<u32>,
    len: usize,
    /// Wrapping sum of every node's digest (0 when the digest is disabled).
    digest: u64,
    digest_enabled: bool,
    ephemerals: HashMap<i64, BTreeSet<Box<str>>>,
    containers: BTreeSet<Box<str>>,
    ttls: BTreeSet<Box<str>>,
    /// One shared copy of each distinct ACL list in use.
    acls: AclTable,
}

impl Tree {
    /// An empty tree holding only the root.
    pub fn new(digest_enabled: bool, mut root: Node) -> Tree {
        let mut acls = AclTable::default();
        acls.intern(&mut root.acl);
        let mut t = Tree {
            slots: vec![Some(root)],
            free: Vec::new(),
            len: 1,
            digest: 0,
            digest_enabled,
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
            acls,
        };
        t.refresh_digest("/", ROOT);
        t
    }

    fn slot(&self, id: u32) -> &Node {
        self.slots[id as usize].as_ref().expect("invariant: linked slot is live")
    }

    fn slot_mut(&mut self, id: u32) -> &mut Node {
        self.slots[id as usize].as_mut().expect("invariant: linked slot is live")
    }

    /// The arena slot of `path`: exactly the stored paths resolve (no normalisation), as with
    /// a path-keyed map, so "/a/" or "a" find nothing.
    fn id_of(&self, path: &str) -> Option<u32> {
        let rest = path.strip_prefix('/')?;
        if rest.is_empty() {
            return Some(ROOT);
        }
        rest.split('/').try_fold(ROOT, |id, name| self.slot(id).children.get(name))
    }

    /// Every live node with its path, parents before children.
    fn walk(&self, mut f: impl FnMut(&str, &Node)) {
        let mut stack = vec![(String::from("/"), ROOT)];
        while let Some((p, id)) = stack.pop() {
            let n = self.slot(id);
            f(&p, n);
            stack.extend(n.children.entries().map(|(name, c)| (path::join(&p, name), c)));
        }
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.id_of(path).map(|id| self.slot(id))
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
        self.walk(|p, n| acc = acc.wrapping_add(stored_node_digest(p, n)));
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

    /// TTL node paths, ordered.
    pub fn ttl_nodes(&self) -> impl Iterator<Item = &str> {
        self.ttls.iter().map(|p| &**p)
    }

    /// Approximate bytes of data and paths, for `mntr`.
    pub fn approximate_data_size(&self) -> usize {
        let mut size = 0;
        self.walk(|p, n| size += p.len() + n.data.len());
        size
    }

    fn refresh_digest(&mut self, path: &str, id: u32) {
        if !self.digest_enabled {
            return;
        }
        let node = self.slots[id as usize].as_mut().expect("refresh of a missing node");
        let new = stored_node_digest(path, node);
        self.digest = self.digest.wrapping_sub(node.digest).wrapping_add(new);
        node.digest = new;
    }

    /// Changes the node at `path` through `f` and refreshes its digest.
    ///
    /// # Panics
    /// When the node does not exist: `prepare` promised it did.
    pub fn modify(&mut self, path: &str, f: impl FnOnce(&mut Node)) {
        let id = self.id_of(path).unwrap_or_else(|| panic!("invariant: modify of missing node {path}"));
        let node = self.slots[id as usize].as_mut().expect("invariant: linked slot is live");
        let old_acl = node.acl.clone();
        f(node);
        if !Arc::ptr_eq(&old_acl, &node.acl) {
            self.acls.intern(&mut node.acl);
            self.acls.release(&old_acl, 1);
        }
        self.refresh_digest(path, id);
    }

    /// Inserts a new node and links it into its parent (the parent's stat is the caller's job).
    ///
    /// # Panics
    /// When the node exists or the parent does not.
    pub fn insert(&mut self, path: &str, mut node: Node) {
        let (parent, name) = path::split(path).unwrap_or_else(|| panic!("invariant: insert of root"));
        assert!(node.children.is_empty(), "invariant: {path} inserted with children");
        let pid = self.id_of(parent).unwrap_or_else(|| panic!("invariant: parent of {path} missing"));
        assert!(self.slot(pid).children.get(name).is_none(), "invariant: {path} already a child");
        self.acls.intern(&mut node.acl);
        let (ephemeral, container, ttl, owner) =
            (node.is_ephemeral(), node.is_container(), node.is_ttl(), node.stat.ephemeral_owner);
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(node);
                id
            }
            None => {
                let id = u32::try_from(self.slots.len()).expect("more than u32::MAX znodes");
                self.slots.push(Some(node));
                id
            }
        };
        self.len += 1;
        self.slot_mut(pid).children.insert(name, id);
        self.refresh_digest(parent, pid);
        if ephemeral {
            self.ephemerals.entry(owner).or_default().insert(path.into());
        }
        if container {
            self.containers.insert(path.into());
        }
        if ttl {
            self.ttls.insert(path.into());
        }
        self.refresh_digest(path, id);
    }

    /// Removes a leaf node and unlinks it from its parent; returns it.
    ///
    /// # Panics
    /// When the node is missing or has children.
    pub fn remove(&mut self, path: &str) -> Node {
        let (parent, name) = path::split(path).unwrap_or_else(|| panic!("invariant: delete of missing node {path}"));
        let pid = self.id_of(parent).unwrap_or_else(|| panic!("invariant: delete of missing node {path}"));
        let id =
            self.slot(pid).children.get(name).unwrap_or_else(|| panic!("invariant: delete of missing node {path}"));
        assert!(self.slot(id).children.is_empty(), "invariant: delete of non-empty node {path}");
        let node = self.slots[id as usize].take().expect("invariant: linked slot is live");
        self.free.push(id);
        self.len -= 1;
        self.acls.release(&node.acl, 1);
        if self.digest_enabled {
            self.digest = self.digest.wrapping_sub(node.digest);
        }
        self.slot_mut(pid).children.remove(name);
        self.refresh_digest(parent, pid);
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
        let node = Node { data: data.into(), acl, ..Node::default() };
        self.insert(path, node);
    }
}

/// Interned ACL lists. Every create decodes its own ACL list, and a private `Arc` of
/// `world:anyone` costs about 140 B per znode (the `Arc`, two `String`s); trees use a handful
/// of distinct lists, so each node shares one copy instead. A list leaves the table when the
/// last node using it does. Sharing changes no semantics: nodes compare ACLs by value.
#[derive(Debug, Clone, Default)]
struct AclTable {
    /// By a hash of the content (`Acl` has no `Hash`); collisions share a bucket.
    lists: HashMap<u64, Vec<Arc<[Acl]>>>,
}

impl AclTable {
    fn key(acl: &[Acl]) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        for a in acl {
            (a.perms, &a.id.scheme, &a.id.id).hash(&mut h);
        }
        h.finish()
    }

    /// Points `acl` at the shared copy of its content, adding it if new.
    fn intern(&mut self, acl: &mut Arc<[Acl]>) {
        let bucket = self.lists.entry(Self::key(acl)).or_default();
        match bucket.iter().find(|a| ***a == **acl) {
            Some(same) => {
                if !Arc::ptr_eq(same, acl) {
                    *acl = same.clone();
                }
            }
            None => bucket.push(acl.clone()),
        }
    }

    /// Forgets `acl` once only the table and `users` other holders keep it.
    fn release(&mut self, acl: &Arc<[Acl]>, users: usize) {
        if Arc::strong_count(acl) > users + 1 {
            return;
        }
        let key = Self::key(acl);
        if let Some(bucket) = self.lists.get_mut(&key) {
            bucket.retain(|a| !Arc::ptr_eq(a, acl));
            if bucket.is_empty() {
                self.lists.remove(&key);
            }
        }
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
        t.insert("/a", Node { data: b"x".as_slice().into(), acl: Acl::open().into(), ..Node::default() });
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

    #[test]
    fn equal_acls_share_one_copy_until_the_last_user_goes() {
        let mut t = Tree::new(true, root());
        t.insert("/a", Node { acl: Acl::open().into(), ..Node::default() });
        t.insert("/b", Node { acl: Acl::open().into(), ..Node::default() });
        assert!(Arc::ptr_eq(&t.get("/a").unwrap().acl, &t.get("/b").unwrap().acl));
        let read_only: Arc<[Acl]> = Acl::read_only().into();
        t.modify("/a", |n| n.acl = read_only.clone());
        assert_eq!(*t.get("/a").unwrap().acl, *read_only);
        assert_eq!(t.acls.lists.values().map(Vec::len).sum::<usize>(), 2);
        drop(read_only);
        t.remove("/a");
        assert_eq!(t.acls.lists.values().map(Vec::len).sum::<usize>(), 1, "the read-only list left with /a");
        assert_eq!(t.digest(), t.recompute_digest());
    }
}
