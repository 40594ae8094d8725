//! The uncommitted state: every change the proposer has decided that the committed tree does
//! not hold yet, as ZooKeeper's `outstandingChanges` and Keeper's uncommitted state keep them.
//! A proposal is validated against the committed tree seen through this overlay, so pipelined
//! writes see each other (two sequential creates under one parent get different suffixes, a
//! create behind a multi sees the multi's nodes), and its effects are staged here by the same
//! per-op code `apply` runs at commit. The overlay keeps the tree digest as it will be after
//! every staged change: that is the digest each entry carries.
//!
//! A proposal that fails is undone alone (`rollback`); a committed entry's changes leave the
//! overlay once the tree holds them (`committed`).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use foldhash::fast::FixedState;

use crate::apply::ops::Nodes;
use crate::apply::Mutation;
use crate::digest::{DigestPrefix, StatFields};
use crate::node::{AclList, NodeStat, CONTAINER_OWNER};
use crate::path;
use crate::tree::{NewNode, NodeRef, Tree};

/// What prepare needs to know of a node, committed or pending.
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

    fn of(tree: &Tree, path: &str, n: &NodeRef<'_>) -> NodeView {
        NodeView {
            stat: n.stat,
            owner: n.owner(),
            acl: n.acl().clone(),
            num_children: n.num_children() as i32,
            seq: n.seq(),
            ttl: tree.ttl_of(path),
            data_len: n.data().len() as i32,
        }
    }
}

/// A node as the staged changes leave it, with its digest and the digest's hash state after
/// its path and data (so a stat-only change never hashes them again).
#[derive(Debug, Clone)]
struct Pnode {
    view: NodeView,
    /// `None` when the digest is off.
    prefix: Option<DigestPrefix>,
    digest: u64,
}

impl Pnode {
    fn fields(&self) -> StatFields {
        let v = &self.view;
        StatFields::new(&v.stat, v.owner, v.num_children, v.ttl)
    }

    /// Recomputes the digest from the prefix (0 when the digest is off).
    fn redigest(&mut self) {
        self.digest = self.prefix.as_ref().map_or(0, |p| p.finish(&self.fields()));
    }
}

/// The latest staged state of one path and the index of the entry that wrote it.
#[derive(Debug, Clone)]
struct Slot {
    index: u64,
    /// `None`: deleted.
    node: Option<Pnode>,
}

/// Where a proposal started, to undo it alone.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    undo: usize,
    written: usize,
    digest: u64,
}

/// The overlay of uncommitted changes.
#[derive(Debug, Clone)]
pub struct Pending {
    /// Fixed-seeded: the proposer's decisions must not depend on a random hash seed.
    /// Paths are shared with `written` and `undo`: one allocation per path.
    nodes: HashMap<Arc<str>, Slot, FixedState>,
    /// (index, path) of every staged change, in proposal order: what to drop on commit.
    written: VecDeque<(u64, Arc<str>)>,
    /// The slots a proposal replaced, in order, so a failed one can be undone alone.
    undo: Vec<(Arc<str>, Option<Slot>)>,
    /// The tree digest after every staged change.
    digest: u64,
    digest_enabled: bool,
}

impl Pending {
    /// An empty overlay over `tree`.
    pub fn new(tree: &Tree) -> Pending {
        Pending {
            nodes: HashMap::default(),
            written: VecDeque::new(),
            undo: Vec::new(),
            digest: tree.digest(),
            digest_enabled: tree.digest_enabled(),
        }
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The tree digest after every staged change.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// Forgets everything staged (a new leader, a failed append): the overlay is the committed
    /// tree again.
    pub fn reset(&mut self, tree: &Tree) {
        *self = Pending::new(tree);
    }

    /// The tree holds entry `index` (and everything before it): its changes leave the overlay,
    /// unless a later entry changed the same path again.
    pub fn committed(&mut self, index: u64) {
        while self.written.front().is_some_and(|(i, _)| *i <= index) {
            let (i, path) = self.written.pop_front().expect("checked above");
            if self.nodes.get(&*path).is_some_and(|s| s.index == i) {
                self.nodes.remove(&*path);
            }
        }
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark { undo: self.undo.len(), written: self.written.len(), digest: self.digest }
    }

    /// Undoes everything staged since `mark` (a failed proposal rolls back only itself).
    pub(crate) fn rollback(&mut self, mark: Mark) {
        while self.undo.len() > mark.undo {
            let (path, old) = self.undo.pop().expect("checked above");
            match old {
                Some(slot) => self.nodes.insert(path, slot),
                None => self.nodes.remove(&*path),
            };
        }
        self.written.truncate(mark.written);
        self.digest = mark.digest;
    }

    /// The proposal is decided: its undo log is no longer needed.
    pub(crate) fn seal(&mut self) {
        self.undo.clear();
    }
}

/// The committed tree seen through the overlay: what prepare validates against.
#[derive(Clone, Copy)]
pub struct View<'a> {
    tree: &'a Tree,
    /// `None`: the committed tree alone (reads that validate like a write, e.g. Keeper's check).
    pending: Option<&'a Pending>,
}

impl<'a> View<'a> {
    /// `tree` as the staged changes of `pending` leave it.
    pub fn new(tree: &'a Tree, pending: &'a Pending) -> View<'a> {
        View { tree, pending: Some(pending) }
    }

    /// The committed tree alone.
    pub fn committed(tree: &'a Tree) -> View<'a> {
        View { tree, pending: None }
    }

    fn slot(&self, path: &str) -> Option<&'a Slot> {
        self.pending.and_then(|p| p.nodes.get(path))
    }

    fn staged(&self) -> impl Iterator<Item = (&'a str, &'a Slot)> {
        self.pending.into_iter().flat_map(|p| p.nodes.iter().map(|(k, v)| (&**k, v)))
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<NodeView> {
        match self.slot(path) {
            Some(slot) => slot.node.as_ref().map(|n| n.view.clone()),
            None => self.tree.get(path).map(|n| NodeView::of(self.tree, path, &n)),
        }
    }

    /// The children of `path`, as full paths in name order: committed ones not deleted, and
    /// pending ones. The order does not depend on which of them have committed yet.
    pub fn children(&self, path: &str) -> Vec<String> {
        let mut out: Vec<String> = match self.tree.get(path) {
            Some(n) => n
                .children_unordered()
                .map(|c| path::join(path, c.name()))
                .filter(|p| !matches!(self.slot(p), Some(Slot { node: None, .. })))
                .collect(),
            None => Vec::new(),
        };
        out.extend(
            (self.staged())
                .filter(|(p, s)| s.node.is_some() && path::split(p).is_some_and(|(pp, _)| pp == path))
                .filter(|(p, _)| self.tree.get(p).is_none())
                .map(|(p, _)| p.to_string()),
        );
        out.sort_unstable();
        out
    }

    /// The ephemerals of `session`, committed and pending, ordered by path.
    pub fn ephemerals_of(&self, session: i64) -> Vec<String> {
        let mut set: BTreeSet<String> =
            (self.tree.ephemerals_of(session)).filter(|p| self.slot(p).is_none()).map(str::to_string).collect();
        for (p, slot) in self.staged() {
            if slot.node.as_ref().is_some_and(|n| n.view.owner == session) {
                set.insert(p.to_string());
            }
        }
        set.into_iter().collect()
    }
}

/// The overlay as a target of `apply`'s per-op code, while one entry is staged.
pub(crate) struct Staging<'a> {
    pub(crate) tree: &'a Tree,
    pub(crate) pending: &'a mut Pending,
    /// The entry being staged.
    pub(crate) index: u64,
}

impl Staging<'_> {
    fn current(&self, path: &str) -> Option<Pnode> {
        match self.pending.nodes.get(path) {
            Some(slot) => slot.node.clone(),
            None => self.tree.get(path).map(|n| {
                let prefix = self.pending.digest_enabled.then(|| n.digest_prefix(path));
                let digest = prefix.as_ref().map_or(0, |p| p.finish(&n.digest_fields(path)));
                Pnode { view: NodeView::of(self.tree, path, &n), prefix, digest }
            }),
        }
    }

    fn prefix(&self, path: &str, data: Option<&[u8]>) -> Option<DigestPrefix> {
        self.pending.digest_enabled.then(|| DigestPrefix::new(path, data.unwrap_or_default()))
    }

    /// Records `node` as the state of `path` after the staged entry, moving the digest.
    fn put(&mut self, path: &str, old: Option<&Pnode>, node: Option<Pnode>) {
        let p = &mut *self.pending;
        p.digest =
            p.digest.wrapping_sub(old.map_or(0, |o| o.digest)).wrapping_add(node.as_ref().map_or(0, |n| n.digest));
        let key: Arc<str> = p.nodes.get_key_value(path).map_or_else(|| Arc::from(path), |(k, _)| k.clone());
        let prev = p.nodes.insert(key.clone(), Slot { index: self.index, node });
        p.undo.push((key.clone(), prev));
        p.written.push_back((self.index, key));
    }

    /// Changes the stat of `path` (and its data, when `data` is `Some`).
    fn change(&mut self, path: &str, data: Option<Option<&[u8]>>, f: impl FnOnce(&mut NodeView)) {
        let old = self.current(path).unwrap_or_else(|| panic!("invariant: staged change of missing node {path}"));
        let mut node = old.clone();
        if let Some(new) = data {
            node.view.data_len = new.map_or(0, <[u8]>::len) as i32;
            node.prefix = self.prefix(path, new);
        }
        f(&mut node.view);
        node.redigest();
        self.put(path, Some(&old), Some(node));
    }
}

impl Nodes for Staging<'_> {
    fn owner(&self, path: &str) -> Option<i64> {
        self.current(path).map(|n| n.view.owner)
    }

    fn insert(&mut self, _: &Mutation, path: &str, new: NewNode<'_>) {
        let (parent, _) = path::split(path).unwrap_or_else(|| panic!("invariant: staged insert of root"));
        assert!(self.current(path).is_none(), "invariant: staged insert of existing {path}");
        self.change(parent, None, |p| {
            p.num_children += 1;
            p.seq += 1;
        });
        let view = NodeView {
            stat: new.stat,
            owner: new.owner,
            acl: new.acl.clone(),
            num_children: 0,
            seq: 0,
            ttl: new.ttl,
            data_len: new.data.map_or(0, <[u8]>::len) as i32,
        };
        let mut node = Pnode { view, prefix: self.prefix(path, new.data), digest: 0 };
        node.redigest();
        self.put(path, None, Some(node));
    }

    fn remove(&mut self, _: &Mutation, path: &str) {
        let (parent, _) = path::split(path).unwrap_or_else(|| panic!("invariant: staged delete of root"));
        let old = self.current(path).unwrap_or_else(|| panic!("invariant: staged delete of missing {path}"));
        assert_eq!(old.view.num_children, 0, "invariant: staged delete of non-empty {path}");
        self.put(path, Some(&old), None);
        self.change(parent, None, |p| p.num_children -= 1);
    }

    fn update(&mut self, _: &Mutation, path: &str, data: Option<Option<&[u8]>>, f: impl FnOnce(&mut NodeStat)) {
        self.change(path, data, |n| f(&mut n.stat));
    }

    fn set_acl(&mut self, _: &Mutation, path: &str, acl: &AclList) {
        self.change(path, None, |n| n.acl = acl.clone());
    }
}
