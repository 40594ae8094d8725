//! `apply`: the only code that changes the state. It carries out a decided [`Entry`] on the
//! committed tree, keeps the digest incrementally (through the tree), reports per-op results
//! and the watch triggers, and checks the entry's digest. The same per-op code also stages a
//! proposal's effects on the uncommitted overlay (`crate::pending`), so what the proposer
//! predicts and what commit does cannot drift apart in logic, and the digest the entry carries
//! is checked against a tree maintained independently of the overlay.
//!
//! The compiler keeps this the only mutator: every mutating method of the tree and the
//! overlay takes a [`Mutation`] witness, which only this module can make.
//!
//! # Layout
//! - `ops`: the per-op logic, generic over [`ops::Nodes`] (the tree, or the overlay).
//! - `genesis`: the initial tree, and a state rebuilt from a snapshot.

mod genesis;
pub(crate) mod ops;

use std::fmt;

use testkeeper_wire::{Stat, ZkError};

use super::digest::DIGEST_VERSION;
use super::state::{SessionInfo, State};
use super::txn::{Entry, Op, Txn};
pub(crate) use genesis::genesis;
pub use genesis::{NotATree, Restore, RestoredNode};
use ops::At;

/// The witness every tree and overlay mutator demands. Its field is private to this module,
/// so nothing outside `apply` can change a tree.
pub struct Mutation(());

/// What one op did, for the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Created {
        path: String,
        stat: Stat,
    },
    Deleted,
    Set(Stat),
    Checked,
    /// A successful no-op; `path` is what a create reports.
    Nothing {
        path: String,
    },
}

/// What an entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ops(Vec<OpResult>),
    Failed(ZkError),
    MultiFailed(Vec<i32>),
    SessionCreated(i64),
    SessionClosed(i64),
    Noop,
}

/// A change that watches may fire on, in the order the changes happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    Created(String),
    Deleted(String),
    DataChanged(String),
    /// The children of this (parent) path changed.
    ChildrenChanged(String),
}

/// The result of applying one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub outcome: Outcome,
    pub triggers: Vec<Trigger>,
    /// Tree digest after the entry.
    pub digest: u64,
}

/// An entry whose digest differs from the tree's after applying it: this replica (or the
/// proposer) has diverged and must stop serving. The state has applied the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestMismatch {
    pub index: u64,
    pub zxid: i64,
    pub session: i64,
    /// The request type, as Keeper names it in its message.
    pub request: String,
    pub expected: u64,
    pub actual: u64,
    pub version: u8,
    /// The decided change, for the "extra information" line.
    pub txn: String,
}

impl fmt::Display for DigestMismatch {
    /// Keeper's own wording (`KeeperStateMachine::assertDigest`), so operators grep one message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Digest for nodes is not matching after committing request of type '{}' at log index {} for session {}.\n\
             Expected digest - {}, actual digest - {} (digest {}). Keeper will terminate to avoid inconsistencies.\n\
             Extra information about the request:\nzxid {:#x}: {}",
            self.request, self.index, self.session, self.expected, self.actual, self.version, self.zxid, self.txn
        )
    }
}

impl std::error::Error for DigestMismatch {}

/// The request type of a txn, as Keeper's log message names it.
pub fn request_name(txn: &Txn) -> &'static str {
    match txn {
        Txn::Ops(ops) if ops.len() > 1 => "Multi",
        Txn::Ops(ops) => ops.first().map_or("Multi", Op::name),
        Txn::Failed(_) => "Error",
        Txn::MultiFailed(_) => "Multi",
        Txn::CreateSession { .. } => "SessionID",
        Txn::CloseSession { .. } => "Close",
        Txn::Noop => "Sync",
    }
}

impl State {
    /// Applies `entry`, the next one in the log.
    ///
    /// # Errors
    /// A [`DigestMismatch`] when the entry carries a digest (of this digest version) and the
    /// tree's differs after applying it. The entry has been applied: the caller must stop
    /// serving this state.
    ///
    /// # Panics
    /// On an index or zxid that does not follow the last applied one, or a change that
    /// contradicts the tree (a broken invariant between the proposer and apply).
    pub fn apply(&mut self, entry: &Entry) -> Result<Applied, DigestMismatch> {
        assert!(
            self.last_index == 0 || entry.index == self.last_index + 1,
            "invariant: entry {} applied after {}",
            entry.index,
            self.last_index
        );
        assert!(
            entry.zxid >= self.zxid || matches!(entry.txn, Txn::Noop),
            "invariant: entry {} has zxid {:#x} behind {:#x}",
            entry.index,
            entry.zxid,
            self.zxid
        );
        let m = Mutation(());
        // A sync's no-op takes a zxid as every logged request does (Keeper's storage zxid moves
        // on for it, so a read after the sync reports at least the sync's zxid); only raft-rs's
        // own empty entry of a new term carries none (zxid 0).
        if !matches!(entry.txn, Txn::Noop) || entry.zxid > self.zxid {
            self.zxid = entry.zxid;
        }
        self.last_index = entry.index;
        self.last_term = entry.term;
        let at = At { zxid: entry.zxid, time_ms: entry.time_ms };
        let mut triggers = Vec::new();
        let outcome = match &entry.txn {
            Txn::Ops(list) => {
                let mut results = Vec::with_capacity(list.len());
                for op in list {
                    let shown = ops::apply(&mut self.tree, &m, &self.rules, op, at, Some(&mut triggers));
                    results.push(self.result(op, shown));
                }
                Outcome::Ops(results)
            }
            Txn::Failed(e) => Outcome::Failed(*e),
            Txn::MultiFailed(codes) => Outcome::MultiFailed(codes.clone()),
            Txn::CreateSession { id, timeout_ms, passwd } => {
                assert!(!self.sessions.contains_key(id), "invariant: session {id:#x} created twice");
                self.sessions.insert(*id, SessionInfo { timeout_ms: *timeout_ms, passwd: *passwd });
                self.next_session_id = self.next_session_id.max(id + 1);
                Outcome::SessionCreated(*id)
            }
            Txn::CloseSession { id, ephemerals } => {
                ops::close_session(&mut self.tree, &m, &self.rules, *id, ephemerals, at, Some(&mut triggers));
                self.sessions.remove(id);
                Outcome::SessionClosed(*id)
            }
            Txn::Noop => Outcome::Noop,
        };
        let digest = self.tree.digest();
        if let Some((version, expected)) = entry.digest {
            if self.tree.digest_enabled() && version == DIGEST_VERSION && expected != digest {
                return Err(DigestMismatch {
                    index: entry.index,
                    zxid: entry.zxid,
                    session: entry.session,
                    request: request_name(&entry.txn).to_string(),
                    expected,
                    actual: digest,
                    version,
                    txn: format!("{:?}", entry.txn),
                });
            }
        }
        Ok(Applied { outcome, triggers, digest })
    }

    /// The reply's view of what one op did, read from the tree right after it.
    fn result(&self, op: &Op, shown: ops::Shown) -> OpResult {
        match shown {
            ops::Shown::Created => {
                let path = op.path().to_string();
                OpResult::Created { stat: self.stat(&path), path }
            }
            ops::Shown::Deleted => OpResult::Deleted,
            ops::Shown::Set => OpResult::Set(self.stat(op.path())),
            ops::Shown::Checked => OpResult::Checked,
            ops::Shown::Nothing => OpResult::Nothing { path: op.path().to_string() },
        }
    }

    /// The client-visible stat of an existing node.
    ///
    /// # Panics
    /// When the node does not exist.
    pub fn stat(&self, path: &str) -> Stat {
        let node = self.tree.get(path).unwrap_or_else(|| panic!("invariant: stat of missing {path}"));
        node.client_stat(self.rules.hide_special_owners)
    }
}

/// Stages one decided op on the uncommitted overlay (see `crate::pending`), with the same
/// per-op logic commit will run on the tree.
pub(crate) fn stage(nodes: &mut impl ops::Nodes, rules: &super::flavor::Rules, op: &Op, at: At) {
    ops::apply(nodes, &Mutation(()), rules, op, at, None);
}

/// Stages the end of a session on the uncommitted overlay.
pub(crate) fn stage_close(
    nodes: &mut impl ops::Nodes,
    rules: &super::flavor::Rules,
    id: i64,
    paths: &[String],
    at: At,
) {
    ops::close_session(nodes, &Mutation(()), rules, id, paths, at, None);
}

/// Tests of the tree's own mechanics may change a tree directly.
#[cfg(test)]
pub(crate) fn test_witness() -> Mutation {
    Mutation(())
}
