//! Where states come from, besides applying entries: the initial tree of a fresh server, and a
//! state rebuilt node by node from a snapshot. Both build trees, so they live under `apply`
//! and use its [`Mutation`] witness.

use std::collections::BTreeMap;
use std::sync::Arc;

use testkeeper_wire::Acl;

use super::Mutation;
use crate::flavor::Rules;
use crate::node::{AclList, NodeStat};
use crate::state::{SessionInfo, State, StateOptions};
use crate::tree::{NewNode, Tree};

/// A fresh state with the flavor's system nodes.
pub(crate) fn genesis(opts: &StateOptions) -> State {
    let m = Mutation(());
    let open: AclList = Arc::new(Acl::open());
    let mut tree = Tree::new(opts.digest_enabled, &open);
    let rules = &opts.rules;
    if rules.keeper_system_nodes {
        system(&mut tree, &m, "/keeper", b"", &open);
        system(&mut tree, &m, "/keeper/api_version", &opts.api_version, &open);
        system(&mut tree, &m, "/keeper/feature_flags", &opts.feature_flags, &open);
    }
    system(&mut tree, &m, "/zookeeper", b"", &open);
    system(&mut tree, &m, "/zookeeper/quota", b"", &open);
    if rules.zookeeper_config_node {
        system(&mut tree, &m, "/zookeeper/config", &opts.zookeeper_config, &Arc::new(Acl::read_only()));
        // ZooKeeper creates the config node with aversion -1 (measured on 3.8.0).
        tree.modify(&m, "/zookeeper/config", |n| n.stat.aversion = -1);
    }
    // ZooKeeper's visible cversion is 2*creates - children: system children were added
    // without a create, so a fresh /zookeeper reads -2 and a fresh root -1.
    let zk_counting = rules.root_initial_cversion < 0;
    if zk_counting {
        let n = tree.get("/zookeeper").map_or(0, |n| n.num_children() as i32);
        tree.modify(&m, "/zookeeper", |node| node.stat.cversion = -n);
    }
    tree.modify(&m, "/", |node| node.stat.cversion = rules.root_initial_cversion);
    State {
        rules: rules.clone(),
        tree,
        sessions: BTreeMap::new(),
        zxid: 0,
        next_session_id: rules.first_session_id,
        last_index: 0,
        last_term: 0,
    }
}

/// A system node: an all-zero stat, and the parent's stat and sequential counter left alone
/// (ZooKeeper and Keeper add them without counting a child change).
fn system(tree: &mut Tree, m: &Mutation, path: &str, data: &[u8], acl: &AclList) {
    let new = NewNode { data: Some(data), acl, stat: NodeStat::default(), owner: 0, ttl: 0 };
    tree.insert_uncounted(m, path, new);
}

/// One node of a snapshot, as stored.
#[derive(Debug, Clone, Copy)]
pub struct RestoredNode<'a> {
    pub path: &'a str,
    /// `None` = null data.
    pub data: Option<&'a [u8]>,
    pub acl: &'a AclList,
    pub stat: NodeStat,
    pub owner: i64,
    pub ttl: i64,
    /// The node's sequential-suffix counter (children ever created).
    pub seq: i64,
}

/// Rebuilds a state from a snapshot: the root first, then every other node parents before
/// children (path order does that), then the sessions and counters.
pub struct Restore {
    m: Mutation,
    rules: Rules,
    tree: Tree,
    sessions: BTreeMap<i64, SessionInfo>,
}

/// Restored nodes that do not make a tree (a snapshot out of path order, or damaged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotATree {
    /// A path with no parent to split off.
    BadPath(String),
    /// A node whose parent has not been restored yet.
    BeforeParent(String),
    /// A node restored twice.
    Twice(String),
}

impl std::fmt::Display for NotATree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotATree::BadPath(p) => write!(f, "bad path {p:?}"),
            NotATree::BeforeParent(p) => write!(f, "{p} comes before its parent"),
            NotATree::Twice(p) => write!(f, "{p} appears twice"),
        }
    }
}

impl std::error::Error for NotATree {}

impl Restore {
    /// A tree holding only a root, to be overwritten by the snapshot's root.
    pub fn new(rules: Rules, digest_enabled: bool) -> Restore {
        let open: AclList = Arc::new(Acl::open());
        Restore { m: Mutation(()), rules, tree: Tree::new(digest_enabled, &open), sessions: BTreeMap::new() }
    }

    /// Adds a node (the root's fields replace the placeholder root's).
    ///
    /// # Errors
    /// When the parent has not been restored yet, or the node already has been: the
    /// snapshot is not in path order, or not a tree.
    pub fn try_node(&mut self, n: RestoredNode<'_>) -> Result<(), NotATree> {
        if n.path != "/" {
            let (parent, _) = crate::path::split(n.path).ok_or_else(|| NotATree::BadPath(n.path.to_string()))?;
            if self.tree.get(parent).is_none() {
                return Err(NotATree::BeforeParent(n.path.to_string()));
            }
            if self.tree.get(n.path).is_some() {
                return Err(NotATree::Twice(n.path.to_string()));
            }
        }
        self.node(n);
        Ok(())
    }

    fn node(&mut self, n: RestoredNode<'_>) {
        let m = &self.m;
        if n.path != "/" {
            let new = NewNode { data: n.data, acl: n.acl, stat: n.stat, owner: n.owner, ttl: n.ttl };
            self.tree.insert_uncounted(m, n.path, new);
        } else {
            self.tree.modify(m, "/", |root| {
                root.set_data(n.data);
                root.stat = n.stat;
            });
            self.tree.set_acl(m, "/", n.acl);
        }
        self.tree.set_seq(m, n.path, n.seq);
    }

    /// Adds a session.
    pub fn session(&mut self, id: i64, timeout_ms: i32, passwd: [u8; 16]) {
        self.sessions.insert(id, SessionInfo { timeout_ms, passwd });
    }

    /// The restored state, as of log index `last_index` (term `last_term`, zxid `zxid`).
    pub fn finish(self, zxid: i64, next_session_id: i64, last_index: u64, last_term: u64) -> State {
        State {
            rules: self.rules,
            tree: self.tree,
            sessions: self.sessions,
            zxid,
            next_session_id,
            last_index,
            last_term,
        }
    }
}
