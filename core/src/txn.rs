//! The closed set of changes `prepare` can decide and `apply` can carry out, and the log entry.
//!
//! Everything nondeterministic is already decided here: final paths (sequential suffixes),
//! owners, versions, the parent's new cversion, session ids. The entry adds the index, the zxid,
//! the time and the digest after the change.

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

impl Op {
    /// The request type, as Keeper's log messages name it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Create(_) => "Create",
            Op::Delete { .. } => "Remove",
            Op::DeleteMany { .. } => "RemoveRecursive",
            Op::SetData { .. } => "Set",
            Op::SetAcl { .. } => "SetACL",
            Op::Check { .. } => "Check",
            Op::Nothing { .. } => "Nothing",
        }
    }

    /// The path the op reports (for a subtree delete: its root, removed last).
    pub fn path(&self) -> &str {
        match self {
            Op::Create(c) => &c.path,
            Op::DeleteMany { paths } => paths.last().map_or("/", String::as_str),
            Op::Delete { path } | Op::SetData { path, .. } | Op::SetAcl { path, .. } => path,
            Op::Check { path } | Op::Nothing { path } => path,
        }
    }
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
    /// A new session with its negotiated timeout and password (16 zero bytes in Keeper).
    CreateSession { id: i64, timeout_ms: i32, passwd: [u8; 16] },
    /// A session ends; its ephemerals, listed by prepare, are deleted.
    CloseSession { id: i64, ephemerals: Vec<String> },
    /// Changes nothing: a Raft leader's first entry of its term, and Keeper's `sync` in a
    /// cluster (a round trip through the log).
    Noop,
}

/// One entry of the log: the unit that `apply` consumes and replay repeats. Entries are made in
/// exactly one place, [`crate::propose::Proposer::propose`] (and read back by the codec), so
/// their fields are visible only inside the core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub(crate) index: u64,
    /// The Raft term the entry was proposed in (1 in standalone mode).
    pub(crate) term: u64,
    pub(crate) zxid: i64,
    /// Leader-assigned time in ms since the epoch.
    pub(crate) time_ms: i64,
    /// The session that issued the request (0 for internal requests).
    pub(crate) session: i64,
    pub(crate) txn: Txn,
    /// (digest version, tree digest after this entry), decided by the proposer; `None` when
    /// the digest is off.
    pub(crate) digest: Option<(u8, u64)>,
    /// Who waits for the entry: the node that holds the client's connection and its request
    /// number there (0 = nobody). Not state: it routes the reply, and replay ignores it.
    pub(crate) origin: u64,
}

impl Entry {
    /// The log index.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The Raft term it was proposed in.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The zxid it takes.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// Its time, ms since the epoch.
    pub fn time_ms(&self) -> i64 {
        self.time_ms
    }

    /// The session that issued it (0 for internal requests).
    pub fn session(&self) -> i64 {
        self.session
    }

    /// What it does.
    pub fn txn(&self) -> &Txn {
        &self.txn
    }

    /// (digest version, tree digest after the entry), if the digest is on.
    pub fn digest(&self) -> Option<(u8, u64)> {
        self.digest
    }

    /// Who waits for the entry (see [`origin`](Entry::origin)).
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// A Raft no-op at `index` in `term` (a new leader's first entry): it changes nothing but
    /// the applied index.
    pub fn noop(index: u64, term: u64) -> Entry {
        Entry { index, term, zxid: 0, time_ms: 0, session: 0, txn: Txn::Noop, digest: None, origin: 0 }
    }

    /// An entry another server logged (a ZooKeeper txn log being imported): its zxid, time and
    /// session as that server decided them, at `index`, with no digest (the importer checks
    /// the imported state as a whole).
    pub fn foreign(index: u64, zxid: i64, time_ms: i64, session: i64, txn: Txn) -> Entry {
        Entry { index, term: 1, zxid, time_ms, session, txn, digest: None, origin: 0 }
    }

    /// Fault injection only: the entry as a replica with a corrupted copy would apply it (the
    /// data of its first create or setData gains a byte), so that replica's tree, and so its
    /// digest, diverge at this entry while the entry still carries the right digest.
    pub fn corrupted(mut self) -> Entry {
        if let Txn::Ops(ops) = &mut self.txn {
            for op in ops {
                match op {
                    Op::Create(CreateTxn { data, .. }) | Op::SetData { data, .. } => {
                        data.get_or_insert_with(Vec::new).push(0x5a);
                        break;
                    }
                    _ => {}
                }
            }
        }
        self
    }

    /// Fault injection only: the same entry carrying a wrong digest, as ClickHouse's
    /// `keeper_leader_sets_invalid_digest` failpoint makes a leader write. Every replica that
    /// applies it must stop.
    pub fn with_invalid_digest(mut self) -> Entry {
        if let Some((v, d)) = self.digest {
            self.digest = Some((v, d ^ 0x5a5a_5a5a_5a5a_5a5a));
        }
        self
    }
}
