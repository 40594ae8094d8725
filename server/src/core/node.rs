//! One znode as the server stores it, and the child-name set each parent keeps.
//!
//! Memory per znode is a target (issue 7), so the layout is deliberate: the data is a
//! `Box<[u8]>` (no spare capacity), and child names are stored once, in the parent, inline
//! when short (see `Name`), mapped to the child's slot in the tree's arena.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use testkeeper_wire::{Acl, Stat};

/// The ephemeralOwner sentinel of container nodes (ZooKeeper `EphemeralType.CONTAINER_EPHEMERAL_OWNER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// The persisted part of a node's stat: what the server stores. `dataLength` and `numChildren`
/// are derived from the node itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeStat {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    /// Client-visible cversion (child creates + deletes, offset by the flavor's initial value).
    pub cversion: i32,
    pub aversion: i32,
    /// Session id of an ephemeral, `CONTAINER_OWNER` for containers, 0 otherwise (TTL too).
    pub ephemeral_owner: i64,
    pub pzxid: i64,
}

/// A znode.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    pub data: Data,
    /// Shared: most trees use a handful of distinct ACLs (the tree interns them).
    pub acl: Arc<[Acl]>,
    pub stat: NodeStat,
    /// Child names, ordered so listings and digests are deterministic, and the sequential
    /// counter. Only `Tree` links children.
    pub children: Children,
    /// TTL in ms for TTL nodes, else 0.
    pub ttl: i64,
    /// Cached per-node digest (Keeper formula); 0 until computed.
    pub digest: u64,
}

impl Node {
    /// Children ever created under this node: the sequential-suffix counter, kept apart from cversion.
    pub fn seq(&self) -> i64 {
        self.children.0.as_ref().map_or(0, |k| k.seq)
    }

    /// Counts one more child created under this node.
    pub fn bump_seq(&mut self) {
        self.children.0.get_or_insert_with(Box::default).seq += 1;
    }

    /// Whether this is a (session) ephemeral.
    pub fn is_ephemeral(&self) -> bool {
        self.stat.ephemeral_owner != 0 && self.stat.ephemeral_owner != CONTAINER_OWNER
    }

    /// Whether this is a container node.
    pub fn is_container(&self) -> bool {
        self.stat.ephemeral_owner == CONTAINER_OWNER
    }

    /// Whether this is a TTL node.
    pub fn is_ttl(&self) -> bool {
        self.ttl > 0
    }

    /// The stat a client reads. `hide_special_owners` reports 0 for container nodes, as ZooKeeper does.
    pub fn client_stat(&self, hide_special_owners: bool) -> Stat {
        let s = &self.stat;
        let owner = if hide_special_owners && self.is_container() { 0 } else { s.ephemeral_owner };
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: owner,
            data_length: self.data.len() as i32,
            num_children: self.children.len() as i32,
            pzxid: s.pzxid,
        }
    }
}

/// A node's data. Null is kept apart from empty because the zookeeper flavor answers getData
/// of a node created with null data with a null buffer; it reads as empty bytes everywhere
/// else. `Option<Box<[u8]>>` is 16 bytes, as the bytes alone would be: the null flag is free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Data(Option<Box<[u8]>>);

impl Data {
    /// The data a write leaves: `None` is null if `keep_null`, else empty.
    pub fn new(bytes: Option<&[u8]>, keep_null: bool) -> Data {
        match bytes {
            None if keep_null => Data(None),
            b => Data(Some(b.unwrap_or_default().into())),
        }
    }

    /// Whether the data was written as null (and kept so). Always empty.
    pub fn is_null(&self) -> bool {
        self.0.is_none()
    }
}

impl Default for Data {
    /// Empty, not null.
    fn default() -> Data {
        Data(Some(Box::default()))
    }
}

impl std::ops::Deref for Data {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl From<Vec<u8>> for Data {
    fn from(v: Vec<u8>) -> Data {
        Data(Some(v.into_boxed_slice()))
    }
}

impl From<&[u8]> for Data {
    fn from(v: &[u8]) -> Data {
        Data(Some(v.into()))
    }
}

/// A node's children: name (ordered bytewise, as `str` orders) to the child's arena slot, and
/// the sequential counter.
///
/// Boxed, and absent until the first child: nearly every znode is a leaf, and an empty
/// `BTreeMap` plus counter inline would cost 32 bytes in each of them where the box costs 8.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Children(Option<Box<Kids>>);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Kids {
    names: BTreeMap<Name, u32>,
    seq: i64,
}

impl Children {
    /// Number of children.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |k| k.names.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Child names in order.
    pub fn iter(&self) -> ChildNames<'_> {
        ChildNames(self.0.as_ref().map(|k| k.names.keys()))
    }

    /// Child names in order, with their arena slots (for the tree's own walks).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, u32)> {
        self.0.iter().flat_map(|k| k.names.iter().map(|(n, id)| (n.as_str(), *id)))
    }

    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.0.as_ref()?.names.get(name).copied()
    }

    /// Links `name`; false if it was already there (then nothing changes).
    pub(crate) fn insert(&mut self, name: &str, id: u32) -> bool {
        match self.0.get_or_insert_with(Box::default).names.entry(Name::new(name)) {
            std::collections::btree_map::Entry::Occupied(_) => false,
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(id);
                true
            }
        }
    }

    pub(crate) fn remove(&mut self, name: &str) -> Option<u32> {
        let kids = self.0.as_mut()?;
        let id = kids.names.remove(name);
        if kids.names.is_empty() && kids.seq == 0 {
            // Back to the leaf representation, so that equal nodes compare equal.
            self.0 = None;
        }
        id
    }
}

/// The names of a node's children, in order.
pub struct ChildNames<'a>(Option<std::collections::btree_map::Keys<'a, Name, u32>>);

impl<'a> Iterator for ChildNames<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        self.0.as_mut()?.next().map(Name::as_str)
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = &'a str;
    type IntoIter = ChildNames<'a>;

    fn into_iter(self) -> ChildNames<'a> {
        self.iter()
    }
}

/// Longest name kept inline. Generated child names ("n123", "lock-0000000042") are short, so
/// most names cost no allocation of their own: a heap `Box<str>` of a few bytes takes a
/// 32-byte malloc chunk plus its 16-byte pointer, where this takes 24 bytes in the B-tree node.
const INLINE: usize = 22;

/// A child name: inline up to `INLINE` bytes, else on the heap. Compares as its `str`.
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    Inline(u8, [u8; INLINE]),
    Heap(Box<str>),
}

impl Name {
    fn new(s: &str) -> Name {
        if s.len() <= INLINE {
            let mut b = [0u8; INLINE];
            b[..s.len()].copy_from_slice(s.as_bytes());
            Name(Repr::Inline(s.len() as u8, b))
        } else {
            Name(Repr::Heap(s.into()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // SAFETY: the bytes are a whole `&str` copied in `new`, so they are valid UTF-8;
            // checking again would cost a scan on every B-tree comparison.
            Repr::Inline(len, b) => unsafe { std::str::from_utf8_unchecked(&b[..usize::from(*len)]) },
            Repr::Heap(s) => s,
        }
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_order_as_str_inline_or_not() {
        let long = "x".repeat(INLINE + 1);
        let mut c = Children::default();
        for (i, n) in ["n2", "n10", "", "é", long.as_str(), "n1"].into_iter().enumerate() {
            assert!(c.insert(n, i as u32));
        }
        assert!(!c.insert("n10", 9), "a second insert of a name changes nothing");
        assert_eq!(c.get("n10"), Some(1));
        let mut want = vec!["n2", "n10", "", "é", long.as_str(), "n1"];
        want.sort_unstable();
        assert_eq!(c.iter().collect::<Vec<_>>(), want);
        assert_eq!(std::mem::size_of::<Name>(), 24);
        // Memory per znode is a target (issue 7): a field added here is paid a million times.
        assert_eq!(std::mem::size_of::<Option<Node>>(), 120);
        for n in want {
            assert!(c.remove(n).is_some());
        }
        assert_eq!(c, Children::default(), "emptied is the same as never filled");
    }
}
