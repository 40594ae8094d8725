//! `prepare`: validates one write op against the committed tree seen through the uncommitted
//! overlay ([`View`]) and decides everything the change needs (final path, owner, versions,
//! parent cversion). It returns an [`Op`] or the error the real server answers; it never
//! mutates. The proposer (`crate::propose`) stages each decided op so the next one sees it.
//! One file per operation family.

mod check;
mod create;
mod delete;
mod set;

use testkeeper_wire::{Request, ZkError};

use super::acl::AuthId;
use super::pending::View;
use super::state::State;
use super::txn::Op;

/// Who is asking.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The requesting session (0 for internal requests such as the container reaper).
    pub session: i64,
    /// Identities the session has authenticated as.
    pub auth: &'a [AuthId],
}

/// The ephemerals a closing session leaves, in the order they are deleted: sorted by path, or,
/// where the flavor says so, in the iteration order of ZooKeeper's per-session HashSet.
pub(crate) fn close_order(state: &State, view: &View<'_>, id: i64) -> Vec<String> {
    let mut ephemerals = view.ephemerals_of(id);
    if state.rules.java_hashset_close_order {
        // ZooKeeper deletes a closing session's ephemerals in the iteration order of a
        // *clone* of its per-session java.util.HashSet (PrepRequestProcessor copies it into
        // the CloseSessionTxn). The clone is pre-sized for its size, so its order is: bucket
        // in the clone's smaller table, then the original's order (its bucket, then creation
        // order). The order shows in the watch events other sessions receive.
        let n = ephemerals.len();
        let (cap, clone_cap) = (java_hashset_capacity(n), java_clone_capacity(n));
        let czxid = |p: &str| view.get(p).map_or(0, |n| n.stat.czxid);
        ephemerals.sort_by_key(|p| (java_bucket(p, clone_cap), java_bucket(p, cap), czxid(p)));
    }
    ephemerals
}

/// Decides one write op (a single write, or one sub-op of a multi) against `view`.
///
/// # Errors
/// The error the real server answers for it.
pub fn decide(state: &State, view: &View<'_>, req: &Request, ctx: &Ctx<'_>) -> Result<Op, ZkError> {
    match req {
        Request::Create(c) => create::prepare(state, view, c, ctx),
        Request::Delete(d) => delete::prepare(state, view, &d.path, d.version, ctx),
        Request::TryRemove(d) => delete::prepare_try(state, view, &d.path, d.version, ctx),
        Request::RemoveRecursive(r) => delete::prepare_recursive(state, view, &r.path, r.limit, ctx),
        Request::SetData(s) => set::prepare_data(state, view, s, ctx),
        Request::SetAcl(s) => set::prepare_acl(state, view, s, ctx),
        Request::Check(c) => check::prepare_version(state, view, &c.path, c.version, ctx),
        Request::CheckNotExists(c) => check::prepare_not_exists(state, view, &c.path, c.version, ctx),
        Request::CheckStat(c) => check::prepare_stat(state, view, c, ctx),
        _ => Err(ZkError::BadArguments),
    }
}

/// Java's `String.hashCode` spread as `HashMap.hash` does, masked to a table of `cap` buckets.
fn java_bucket(s: &str, cap: usize) -> usize {
    let h = s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let h = h as u32;
    ((h ^ (h >> 16)) as usize) & (cap - 1)
}

/// The table size of a `HashSet` holding `n` entries (initial 16, doubling past 3/4 full).
/// A set that once held more than it holds now may be larger; that history is not kept.
fn java_hashset_capacity(n: usize) -> usize {
    let mut cap = 16;
    while n * 4 > cap * 3 {
        cap *= 2;
    }
    cap
}

/// The table size `HashMap.clone()` picks for `n` entries on Java 17 (`putMapEntries` pre-sizing:
/// `tableSizeFor((int)(n / 0.75f + 1))`).
fn java_clone_capacity(n: usize) -> usize {
    let t = ((n as f32) / 0.75 + 1.0) as usize;
    t.max(1).next_power_of_two()
}

/// `expected == -1` matches any version; returns the next version.
fn check_version(current: i32, expected: i32) -> Result<i32, ZkError> {
    if expected != -1 && expected != current {
        return Err(ZkError::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

#[cfg(test)]
mod java_order_tests {
    use super::*;

    #[test]
    fn java_string_hash_buckets() {
        // "hello".hashCode() == 99162322 in Java; spread: h ^ (h >>> 16).
        let h: u32 = 99162322;
        assert_eq!(java_bucket("hello", 16), ((h ^ (h >> 16)) & 15) as usize);
        assert_eq!(java_hashset_capacity(12), 16);
        assert_eq!(java_hashset_capacity(13), 32);
        assert_eq!((java_clone_capacity(1), java_clone_capacity(2), java_clone_capacity(3)), (2, 4, 8));
        assert_eq!((java_clone_capacity(6), java_clone_capacity(12)), (16, 32));
    }
}
