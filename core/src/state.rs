//! The committed, replicated state: the tree, the session table, the zxid and the index of the
//! last applied entry. Its fields are private: [`crate::propose`] decides changes against it,
//! and `State::apply` (in `apply/`) is the only code that changes it. No clock, socket or
//! randomness is read here: time and ids arrive in the entry.

use std::collections::BTreeMap;

use super::flavor::Rules;
use super::tree::Tree;

/// A session as the state machine knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    pub timeout_ms: i32,
    /// What a client must present to resume the session (zookeeper flavor; zeros in Keeper).
    pub passwd: [u8; 16],
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
    pub(crate) rules: Rules,
    pub(crate) tree: Tree,
    pub(crate) sessions: BTreeMap<i64, SessionInfo>,
    /// zxid of the last applied entry.
    pub(crate) zxid: i64,
    /// The id the next created session gets.
    pub(crate) next_session_id: i64,
    /// Index and term of the last applied entry.
    pub(crate) last_index: u64,
    pub(crate) last_term: u64,
}

impl State {
    /// A fresh state with the flavor's system nodes (built by `apply::genesis`, the only other
    /// place besides `apply` that may change a tree).
    pub fn new(opts: &StateOptions) -> State {
        super::apply::genesis(opts)
    }

    /// The flavor's behaviour switches.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The committed tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Live sessions with their timeouts, by id.
    pub fn sessions(&self) -> &BTreeMap<i64, SessionInfo> {
        &self.sessions
    }

    /// zxid of the last applied entry.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The id the next created session gets.
    pub fn next_session_id(&self) -> i64 {
        self.next_session_id
    }

    /// Index of the last applied entry (0 before any).
    pub fn last_index(&self) -> u64 {
        self.last_index
    }

    /// Term of the last applied entry (0 before any).
    pub fn last_term(&self) -> u64 {
        self.last_term
    }

    /// The tree digest kept incrementally (0 when the digest is off).
    pub fn digest(&self) -> u64 {
        self.tree.digest()
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
