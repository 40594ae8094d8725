//! The per-op logic of `apply`, written once over [`Nodes`]: the committed [`Tree`] at commit,
//! the uncommitted overlay (`crate::pending`) when the proposer stages a change. Anything that
//! contradicts what the proposer decided is a broken invariant and panics: serving a diverged
//! tree is worse than stopping.

use super::{Mutation, Trigger};
use crate::flavor::Rules;
use crate::node::{stored_data, AclList, NodeStat};
use crate::path;
use crate::tree::{NewNode, Tree};
use crate::txn::CreateTxn;
pub(crate) use crate::txn::Op;

/// When an entry happens: its zxid and leader-assigned time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub zxid: i64,
    pub time_ms: i64,
}

/// Which client-visible result an op has (the tree reads the stat right after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    Created,
    Deleted,
    Set,
    Checked,
    Nothing,
}

/// The primitive changes the per-op logic makes, and the little it reads back to assert what
/// the proposer promised. Every mutator takes the [`Mutation`] witness.
pub(crate) trait Nodes {
    /// The ephemeral owner of the node at `path` (0 for a persistent node), if it exists.
    fn owner(&self, path: &str) -> Option<i64>;
    /// Creates a node and links it into its existing parent, counting it in the parent's
    /// sequential counter (the parent's stat is the caller's next step).
    fn insert(&mut self, m: &Mutation, path: &str, new: NewNode<'_>);
    /// Removes a leaf node and unlinks it from its parent.
    fn remove(&mut self, m: &Mutation, path: &str);
    /// Changes the stat of an existing node, and its data when `data` is `Some`.
    fn update(&mut self, m: &Mutation, path: &str, data: Option<Option<&[u8]>>, f: impl FnOnce(&mut NodeStat));
    /// Gives an existing node another ACL list.
    fn set_acl(&mut self, m: &Mutation, path: &str, acl: &AclList);
}

impl Nodes for Tree {
    fn owner(&self, path: &str) -> Option<i64> {
        self.get(path).map(|n| n.owner())
    }

    fn insert(&mut self, m: &Mutation, path: &str, new: NewNode<'_>) {
        Tree::insert(self, m, path, new);
    }

    fn remove(&mut self, m: &Mutation, path: &str) {
        Tree::remove(self, m, path);
    }

    fn update(&mut self, m: &Mutation, path: &str, data: Option<Option<&[u8]>>, f: impl FnOnce(&mut NodeStat)) {
        match data {
            None => self.modify_stat(m, path, f),
            Some(d) => self.modify(m, path, |n| {
                n.set_data(d);
                f(&mut n.stat);
            }),
        }
    }

    fn set_acl(&mut self, m: &Mutation, path: &str, acl: &AclList) {
        Tree::set_acl(self, m, path, acl);
    }
}

fn trigger(triggers: &mut Option<&mut Vec<Trigger>>, make: impl FnOnce() -> Trigger) {
    if let Some(t) = triggers.as_deref_mut() {
        t.push(make());
    }
}

/// Carries out one decided op.
pub(crate) fn apply<N: Nodes>(
    n: &mut N,
    m: &Mutation,
    rules: &Rules,
    op: &Op,
    at: At,
    mut triggers: Option<&mut Vec<Trigger>>,
) -> Shown {
    match op {
        Op::Create(c) => {
            create(n, m, rules, c, at, &mut triggers);
            Shown::Created
        }
        Op::Delete { path } => {
            delete(n, m, rules, path, at, &mut triggers);
            Shown::Deleted
        }
        Op::DeleteMany { paths } => {
            for p in paths {
                delete(n, m, rules, p, at, &mut triggers);
            }
            Shown::Deleted
        }
        Op::SetData { path, data, version } => {
            let data = stored_data(data.as_deref(), rules.preserve_null_data);
            n.update(m, path, Some(data), |s| {
                assert_eq!(s.version.wrapping_add(1), *version, "invariant: version of {path}");
                s.version = *version;
                s.mzxid = at.zxid;
                s.mtime = at.time_ms;
            });
            if rules.set_bumps_parent_cversion {
                if let Some((parent, _)) = path::split(path) {
                    n.update(m, parent, None, |p| p.cversion = p.cversion.wrapping_add(1));
                }
            }
            trigger(&mut triggers, || Trigger::DataChanged(path.clone()));
            Shown::Set
        }
        Op::SetAcl { path, acl, aversion } => {
            n.update(m, path, None, |s| {
                assert_eq!(s.aversion.wrapping_add(1), *aversion, "invariant: aversion of {path}");
                s.aversion = *aversion;
            });
            n.set_acl(m, path, acl);
            Shown::Set
        }
        Op::Check { .. } => Shown::Checked,
        Op::Nothing { .. } => Shown::Nothing,
    }
}

/// Ends session `id`: deletes its ephemerals, listed and ordered by the proposer.
pub(crate) fn close_session<N: Nodes>(
    n: &mut N,
    m: &Mutation,
    rules: &Rules,
    id: i64,
    ephemerals: &[String],
    at: At,
    mut triggers: Option<&mut Vec<Trigger>>,
) {
    for p in ephemerals {
        assert_eq!(n.owner(p), Some(id), "invariant: {p} is not an ephemeral of {id:#x}");
        delete(n, m, rules, p, at, &mut triggers);
    }
}

fn create<N: Nodes>(
    n: &mut N,
    m: &Mutation,
    rules: &Rules,
    c: &CreateTxn,
    at: At,
    triggers: &mut Option<&mut Vec<Trigger>>,
) {
    let (parent, _) = path::split(&c.path).unwrap_or_else(|| panic!("invariant: create of root"));
    let zxid = at.zxid;
    let stat =
        NodeStat { czxid: zxid, mzxid: zxid, ctime: at.time_ms, mtime: at.time_ms, pzxid: zxid, ..NodeStat::default() };
    let data = stored_data(c.data.as_deref(), rules.preserve_null_data);
    n.insert(m, &c.path, NewNode { data, acl: &c.acl, stat, owner: c.ephemeral_owner, ttl: c.ttl });
    n.update(m, parent, None, |p| {
        assert_eq!(p.cversion.wrapping_add(1), c.parent_cversion, "invariant: cversion of {parent} for {}", c.path);
        p.cversion = c.parent_cversion;
        p.pzxid = zxid;
    });
    trigger(triggers, || Trigger::Created(c.path.clone()));
    trigger(triggers, || Trigger::ChildrenChanged(parent.to_string()));
}

fn delete<N: Nodes>(n: &mut N, m: &Mutation, rules: &Rules, p: &str, at: At, triggers: &mut Option<&mut Vec<Trigger>>) {
    let (parent, _) = path::split(p).unwrap_or_else(|| panic!("invariant: delete of root"));
    n.remove(m, p);
    let update_pzxid = rules.delete_updates_parent_pzxid;
    n.update(m, parent, None, |s| {
        s.cversion = s.cversion.wrapping_add(1);
        if update_pzxid && at.zxid > s.pzxid {
            s.pzxid = at.zxid;
        }
    });
    trigger(triggers, || Trigger::Deleted(p.to_string()));
    trigger(triggers, || Trigger::ChildrenChanged(parent.to_string()));
}
