//! The deterministic state machine: the tree, the session table and the zxid. `prepare` decides
//! (in `prepare/`), `apply` (in `apply.rs`) is the only mutator. No clock, socket or randomness
//! is read here: time and ids arrive in the entry.

use std::collections::BTreeMap;
use std::sync::Arc;

use testkeeper_wire::Acl;

use super::flavor::Rules;
use super::node::AclList;
use super::tree::Tree;

/// A session as the state machine knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    pub timeout_ms: i32,
}

/// Options that shape the initial tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateOptions {
    pub rules: Rules,
    pub digest_enabled: bool,
    /// Data of `/keeper/feature_flags` (raw bitmask bytes).
    pub feature_flags: Vec<u8>,
    /// Data of `/keeper/api_version`.
    pub api_version: Vec<u8>,
    /// Data of `/zookeeper/config` (zookeeper flavor).
    pub zookeeper_config: Vec<u8>,
}

/// The replicated state.
#[derive(Debug, Clone)]
pub struct State {
    pub rules: Rules,
    pub tree: Tree,
    pub sessions: BTreeMap<i64, SessionInfo>,
    /// zxid of the last applied entry.
    pub zxid: i64,
    /// The id the next created session gets.
    pub next_session_id: i64,
    /// Index of the last applied entry.
    pub last_index: u64,
}

impl State {
    /// A fresh state with the flavor's system nodes.
    pub fn new(opts: &StateOptions) -> State {
        let open: AclList = Arc::new(Acl::open());
        let mut tree = Tree::new(opts.digest_enabled, &open);
        let rules = &opts.rules;
        if rules.keeper_system_nodes {
            tree.insert_system("/keeper", b"", &open);
            tree.insert_system("/keeper/api_version", &opts.api_version, &open);
            tree.insert_system("/keeper/feature_flags", &opts.feature_flags, &open);
        }
        tree.insert_system("/zookeeper", b"", &open);
        tree.insert_system("/zookeeper/quota", b"", &open);
        if rules.zookeeper_config_node {
            tree.insert_system("/zookeeper/config", &opts.zookeeper_config, &Arc::new(Acl::read_only()));
            // ZooKeeper creates the config node with aversion -1 (measured on 3.8.0).
            tree.modify("/zookeeper/config", |n| n.stat.aversion = -1);
        }
        // ZooKeeper's visible cversion is 2*creates - children: system children were added
        // without a create, so a fresh /zookeeper reads -2 and a fresh root -1.
        let zk_counting = rules.root_initial_cversion < 0;
        if zk_counting {
            let n = tree.get("/zookeeper").map_or(0, |n| n.num_children() as i32);
            tree.modify("/zookeeper", |node| node.stat.cversion = -n);
        }
        tree.modify("/", |node| node.stat.cversion = rules.root_initial_cversion);
        State {
            rules: rules.clone(),
            tree,
            sessions: BTreeMap::new(),
            zxid: 0,
            next_session_id: rules.first_session_id,
            last_index: 0,
        }
    }

    /// Whether `path` is a system node that clients may not delete.
    pub fn is_special_path(&self, path: &str) -> bool {
        matches!(path, "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config")
    }

    /// Whether `path` lies in Keeper's reserved `/keeper` subtree (when the flavor reserves it).
    pub fn is_reserved(&self, path: &str) -> bool {
        self.rules.keeper_path_reserved && super::path::is_under(path, "/keeper")
    }
}
