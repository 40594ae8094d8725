//! The closed set of changes `prepare` can decide and `apply` can carry out, and the log entry.
//!
//! Everything nondeterministic is already decided here: final paths (sequential suffixes),
//! owners, versions, the parent's new cversion, session ids. The entry adds the zxid and time.

use testkeeper_wire::ZkError;

use super::node::AclList;

/// Creates a node. Stat times and zxids come from the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTxn {
    /// Final path, sequential suffix included.
    pub path: String,
    /// `None` = null data as the client sent it.
    pub data: Option<Vec<u8>>,
    pub acl: AclList,
    /// Session for ephemerals, `CONTAINER_OWNER` for containers, else 0.
    pub ephemeral_owner: i64,
    /// TTL in ms, 0 if not a TTL node.
    pub ttl: i64,
    /// The parent's cversion after this create, as prepare computed it; apply checks it.
    pub parent_cversion: i32,
}

/// One decided sub-change, one per request op (a multi has several).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Create(CreateTxn),
    Delete {
        path: String,
    },
    /// Deletes a subtree, children before parents (Keeper's removeRecursive).
    DeleteMany {
        paths: Vec<String>,
    },
    SetData {
        path: String,
        data: Option<Vec<u8>>,
        version: i32,
    },
    SetAcl {
        path: String,
        acl: AclList,
        aversion: i32,
    },
    /// A successful check: no change.
    Check {
        path: String,
    },
    /// A write that succeeds without changing anything (createIfNotExists on an existing node,
    /// tryRemove of an absent one). `path` is what the reply reports.
    Nothing {
        path: String,
    },
}

/// What an entry does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Txn {
    /// One or more changes applied atomically under one zxid.
    Ops(Vec<Op>),
    /// A single write that failed: it still consumes a zxid, as ZooKeeper's error txn does.
    Failed(ZkError),
    /// A multi that failed: the exact per-op codes (0 before the failing op, its code, -2 after).
    MultiFailed(Vec<i32>),
    /// A new session with its negotiated timeout.
    CreateSession { id: i64, timeout_ms: i32 },
    /// A session ends; its ephemerals, listed by prepare, are deleted.
    CloseSession { id: i64, ephemerals: Vec<String> },
}

/// One entry of the log: the unit that `apply` consumes and replay repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub index: u64,
    pub zxid: i64,
    /// Leader-assigned time in ms since the epoch.
    pub time_ms: i64,
    /// The session that issued the request (0 for internal requests).
    pub session: i64,
    pub txn: Txn,
    /// (digest version, tree digest after apply), filled in by whoever applied it first.
    pub digest: Option<(u8, u64)>,
}
