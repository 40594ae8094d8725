//! Other servers' state, in and out: a ClickHouse Keeper snapshot file (read: formats V5 and
//! V6, zstd or ClickHouse's LZ4 blocks; written: V6, zstd) and an Apache ZooKeeper data
//! directory (its newest snapshot plus the txn logs after it, read as keeper-converter reads
//! them). Everything is turned into the core's [`State`] through `apply::Restore` (nodes) and
//! `State::apply` (ZooKeeper's logged txns), so an import is held to the same invariants as
//! recovery from our own snapshots.
//!
//! # Layout
//! - this file: [`import`], [`Imported`], [`ImportError`], the node list both readers fill.
//! - `cursor`: bounds-checked little/big-endian reading.
//! - `ch_blocks`: ClickHouse's compressed block stream.
//! - `keeper`: Keeper snapshot files, both ways.
//! - `zookeeper`: ZooKeeper snapshots and txn logs.
//! - `fuzzing`: the body of the `foreign_state` fuzz target.

pub(crate) mod ch_blocks;
mod cursor;
pub mod fuzzing;
pub mod keeper;
#[cfg(test)]
mod tests;
pub mod zookeeper;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use testkeeper_core::apply::{Restore, RestoredNode};
use testkeeper_core::node::{AclList, NodeStat};
use testkeeper_core::state::{State, StateOptions};
use testkeeper_wire::Acl;

/// One node as another server stored it, its stat already in testkeeper's terms (the
/// client-visible cversion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignNode {
    pub path: String,
    pub data: Option<Vec<u8>>,
    pub acl: Vec<Acl>,
    pub stat: NodeStat,
    /// Session id for an ephemeral, `CONTAINER_OWNER` for a container, else 0.
    pub owner: i64,
    pub ttl: i64,
    /// The sequential-suffix counter.
    pub seq: i64,
}

/// A foreign state before it becomes ours.
#[derive(Debug, Clone, Default)]
pub struct Foreign {
    pub nodes: Vec<ForeignNode>,
    /// (session id, timeout ms).
    pub sessions: Vec<(i64, i32)>,
    pub zxid: i64,
    pub next_session_id: i64,
    /// The log index (Keeper) the state is at; 0 for ZooKeeper, which has none.
    pub index: u64,
    pub term: u64,
    /// The digest the file says its tree has (Keeper digest version 5 only).
    pub stored_digest: Option<u64>,
}

/// What an import produced.
#[derive(Debug)]
pub struct Imported {
    pub state: State,
    /// What was read: the files, in order.
    pub files: Vec<PathBuf>,
    pub format: &'static str,
    /// The digest stored in a Keeper snapshot, when it has one.
    pub stored_digest: Option<u64>,
    /// ZooKeeper txns applied after the snapshot, and those skipped because the (fuzzy)
    /// snapshot already held their effect.
    pub txns_applied: u64,
    pub txns_skipped: u64,
}

impl Imported {
    /// `Some(true)` when the Keeper snapshot's digest equals the imported tree's.
    pub fn digest_matches(&self) -> Option<bool> {
        self.stored_digest.map(|d| d == self.state.tree().digest())
    }
}

/// Why a path cannot be imported. Every variant names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportError {
    Io {
        file: PathBuf,
        why: String,
    },
    /// Not a format this reads, or damaged.
    Format {
        file: PathBuf,
        why: String,
    },
    /// Read, but the nodes do not make a tree, or a logged txn does not apply.
    Content {
        file: PathBuf,
        why: String,
    },
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Io { file, why } => write!(f, "{}: {why}", file.display()),
            ImportError::Format { file, why } => write!(f, "{}: {why}", file.display()),
            ImportError::Content { file, why } => write!(f, "{}: {why}", file.display()),
        }
    }
}

impl std::error::Error for ImportError {}

pub(crate) fn read_file(file: &Path) -> Result<Vec<u8>, ImportError> {
    std::fs::read(file).map_err(|e| ImportError::Io { file: file.to_path_buf(), why: e.to_string() })
}

/// Imports `path`: a Keeper snapshot file, a directory of them (the newest is read), a
/// ZooKeeper `version-2` directory or its parent, or one ZooKeeper snapshot file. `opts`
/// are the serving flavor's: its rules apply, and its system nodes are added where the
/// import lacks them.
///
/// # Errors
/// See [`ImportError`].
pub fn import(path: &Path, opts: &StateOptions) -> Result<Imported, ImportError> {
    if path.is_dir() {
        if let Some(file) = keeper::newest_in(path)? {
            return keeper::import_file(&file, opts);
        }
        if let Some(dir) = zookeeper::version_dir(path) {
            return zookeeper::import_dir(&dir, opts);
        }
        return Err(ImportError::Format {
            file: path.to_path_buf(),
            why:
                "holds no Keeper snapshot (snapshot_N.bin[.zstd]) and no ZooKeeper data (version-2/, snapshot.Z, log.Z)"
                    .into(),
        });
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if zookeeper::is_snapshot_name(&name) {
        return zookeeper::import_snapshot_only(path, opts);
    }
    keeper::import_file(path, opts)
}

/// Builds our state from `foreign`: nodes parents first, the flavor's system nodes where the
/// import has none, then sessions and counters.
pub(crate) fn build(foreign: &Foreign, opts: &StateOptions, file: &Path) -> Result<State, ImportError> {
    let content = |why: String| ImportError::Content { file: file.to_path_buf(), why };
    let mut nodes: Vec<&ForeignNode> = foreign.nodes.iter().collect();
    // Parents before children: by depth, then path (the root has depth 0).
    nodes.sort_by_cached_key(|n| (if n.path == "/" { 0 } else { n.path.matches('/').count() }, n.path.clone()));
    if nodes.first().is_none_or(|n| n.path != "/") {
        return Err(content("no root node".into()));
    }
    let genesis = State::new(opts);
    let mut restore = Restore::new(opts.rules.clone(), opts.digest_enabled);
    let mut acls: Vec<AclList> = Vec::new();
    let mut intern = |acl: &[Acl]| -> AclList {
        if let Some(a) = acls.iter().find(|a| a.as_slice() == acl) {
            return a.clone();
        }
        let a: AclList = Arc::new(acl.to_vec());
        acls.push(a.clone());
        a
    };
    let mut have = std::collections::HashSet::new();
    for n in &nodes {
        if n.path != "/" {
            testkeeper_core::path::validate(&n.path, &opts.rules)
                .map_err(|e| content(format!("node {:?}: {e}", n.path)))?;
        }
        let acl = intern(&n.acl);
        let r = RestoredNode {
            path: &n.path,
            data: n.data.as_deref(),
            acl: &acl,
            stat: n.stat,
            owner: n.owner,
            ttl: n.ttl,
            seq: n.seq,
        };
        restore.try_node(r).map_err(|e| content(e.to_string()))?;
        have.insert(n.path.as_str());
    }
    // The flavor's system nodes (Keeper leaves /keeper's children out of its snapshots;
    // ZooKeeper's /zookeeper/config is made at start-up), as a fresh server has them.
    let mut missing = Vec::new();
    testkeeper_core::snapshot::walk(&genesis, |p, n| {
        if !have.contains(p) {
            let data = (!n.data_is_null()).then(|| n.data().to_vec());
            missing.push((p.to_string(), data, n.acl().clone(), n.stat, n.owner(), n.seq()));
        }
    });
    for (p, data, acl, stat, owner, seq) in &missing {
        let r = RestoredNode { path: p, data: data.as_deref(), acl, stat: *stat, owner: *owner, ttl: 0, seq: *seq };
        restore.try_node(r).map_err(|e| content(format!("system node {p}: {e}")))?;
    }
    for (id, timeout) in &foreign.sessions {
        restore.session(*id, *timeout, [0; 16]);
    }
    let max_session = foreign.sessions.iter().map(|(id, _)| id + 1).max().unwrap_or(0);
    let next = foreign.next_session_id.max(max_session).max(opts.rules.first_session_id);
    Ok(restore.finish(foreign.zxid, next, foreign.index, foreign.term))
}
