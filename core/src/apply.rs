//! `apply`: the only code that changes the state. It carries out a decided [`Entry`], keeps the
//! digest incrementally (through the tree), reports per-op results and the watch triggers, and
//! verifies the entry's digest when it carries one. Anything that contradicts what `prepare`
//! decided is a broken invariant and panics: serving a diverged tree is worse than stopping.

use testkeeper_wire::{Stat, ZkError};

use super::digest::DIGEST_VERSION;
use super::node::{stored_data, NodeStat};
use super::path;
use super::state::{SessionInfo, State};
use super::tree::NewNode;
use super::txn::{CreateTxn, Entry, Op, Txn};

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

impl State {
    /// Applies `entry`. The caller fills `entry.digest` from the result if it was empty.
    ///
    /// # Panics
    /// On a zxid gap, a change that contradicts the tree, or a digest that differs from the one
    /// the entry carries.
    pub fn apply(&mut self, entry: &Entry) -> Applied {
        assert!(
            entry.zxid >= self.zxid,
            "invariant: entry {} has zxid {:#x} behind {:#x}",
            entry.index,
            entry.zxid,
            self.zxid
        );
        self.zxid = entry.zxid;
        self.last_index = entry.index;
        let mut triggers = Vec::new();
        let outcome = match &entry.txn {
            Txn::Ops(ops) => Outcome::Ops(ops.iter().map(|op| self.apply_op(op, entry, &mut triggers)).collect()),
            Txn::Failed(e) => Outcome::Failed(*e),
            Txn::MultiFailed(codes) => Outcome::MultiFailed(codes.clone()),
            Txn::CreateSession { id, timeout_ms } => {
                assert!(!self.sessions.contains_key(id), "invariant: session {id:#x} created twice");
                self.sessions.insert(*id, SessionInfo { timeout_ms: *timeout_ms });
                self.next_session_id = id + 1;
                Outcome::SessionCreated(*id)
            }
            Txn::CloseSession { id, ephemerals } => {
                for p in ephemerals {
                    let owner = self.tree.get(p).map(|n| n.owner());
                    assert_eq!(owner, Some(*id), "invariant: {p} is not an ephemeral of {id:#x}");
                    self.delete(p, entry, &mut triggers);
                }
                self.sessions.remove(id);
                Outcome::SessionClosed(*id)
            }
        };
        let digest = self.tree.digest();
        if let Some((version, expected)) = entry.digest {
            if self.tree.digest_enabled() && version == DIGEST_VERSION && expected != digest {
                panic!(
                    "digest mismatch after applying log index {} (zxid {:#x}, txn {:?}): entry carries {} but the tree has {} (digest version {})",
                    entry.index, entry.zxid, entry.txn, expected, digest, version
                );
            }
        }
        Applied { outcome, triggers, digest }
    }

    fn apply_op(&mut self, op: &Op, entry: &Entry, triggers: &mut Vec<Trigger>) -> OpResult {
        match op {
            Op::Create(c) => self.create(c, entry, triggers),
            Op::Delete { path } => {
                self.delete(path, entry, triggers);
                OpResult::Deleted
            }
            Op::DeleteMany { paths } => {
                for p in paths {
                    self.delete(p, entry, triggers);
                }
                OpResult::Deleted
            }
            Op::SetData { path, data, version } => {
                let (zxid, time) = (entry.zxid, entry.time_ms);
                let keep_null = self.rules.preserve_null_data;
                self.tree.modify(path, |n| {
                    assert_eq!(n.stat.version.wrapping_add(1), *version, "invariant: version of {path}");
                    n.set_data(stored_data(data.as_deref(), keep_null));
                    n.stat.version = *version;
                    n.stat.mzxid = zxid;
                    n.stat.mtime = time;
                });
                if self.rules.set_bumps_parent_cversion {
                    if let Some((parent, _)) = path::split(path) {
                        self.tree.modify(parent, |p| p.stat.cversion = p.stat.cversion.wrapping_add(1));
                    }
                }
                triggers.push(Trigger::DataChanged(path.clone()));
                OpResult::Set(self.stat(path))
            }
            Op::SetAcl { path, acl, aversion } => {
                self.tree.modify(path, |n| {
                    assert_eq!(n.stat.aversion.wrapping_add(1), *aversion, "invariant: aversion of {path}");
                    n.stat.aversion = *aversion;
                });
                self.tree.set_acl(path, acl);
                OpResult::Set(self.stat(path))
            }
            Op::Check { .. } => OpResult::Checked,
            Op::Nothing { path } => OpResult::Nothing { path: path.clone() },
        }
    }

    fn create(&mut self, c: &CreateTxn, entry: &Entry, triggers: &mut Vec<Trigger>) -> OpResult {
        let (parent, _) = path::split(&c.path).unwrap_or_else(|| panic!("invariant: create of root"));
        let (zxid, time) = (entry.zxid, entry.time_ms);
        let stat = NodeStat { czxid: zxid, mzxid: zxid, ctime: time, mtime: time, pzxid: zxid, ..NodeStat::default() };
        let data = stored_data(c.data.as_deref(), self.rules.preserve_null_data);
        self.tree.insert(&c.path, NewNode { data, acl: &c.acl, stat, owner: c.ephemeral_owner, ttl: c.ttl });
        self.tree.modify(parent, |p| {
            assert_eq!(
                p.stat.cversion.wrapping_add(1),
                c.parent_cversion,
                "invariant: cversion of {parent} for {}",
                c.path
            );
            p.stat.cversion = c.parent_cversion;
            p.stat.pzxid = zxid;
        });
        triggers.push(Trigger::Created(c.path.clone()));
        triggers.push(Trigger::ChildrenChanged(parent.to_string()));
        OpResult::Created { path: c.path.clone(), stat: self.stat(&c.path) }
    }

    fn delete(&mut self, p: &str, entry: &Entry, triggers: &mut Vec<Trigger>) {
        let (parent, _) = path::split(p).unwrap_or_else(|| panic!("invariant: delete of root"));
        self.tree.remove(p);
        let update_pzxid = self.rules.delete_updates_parent_pzxid;
        self.tree.modify(parent, |n| {
            n.stat.cversion = n.stat.cversion.wrapping_add(1);
            if update_pzxid && entry.zxid > n.stat.pzxid {
                n.stat.pzxid = entry.zxid;
            }
        });
        triggers.push(Trigger::Deleted(p.to_string()));
        triggers.push(Trigger::ChildrenChanged(parent.to_string()));
    }

    /// The client-visible stat of an existing node.
    pub fn stat(&self, path: &str) -> Stat {
        let node = self.tree.get(path).unwrap_or_else(|| panic!("invariant: stat of missing {path}"));
        node.client_stat(self.rules.hide_special_owners)
    }
}
