//! One znode as the server stores it.

use std::collections::BTreeSet;
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
    pub data: Vec<u8>,
    /// The data was written as null (zookeeper flavor keeps null apart from empty; its
    /// getData answers a null buffer). Always empty `data`.
    pub null_data: bool,
    /// Shared: most trees use a handful of distinct ACLs.
    pub acl: Arc<[Acl]>,
    pub stat: NodeStat,
    /// Child names, ordered so listings and digests are deterministic.
    pub children: BTreeSet<Box<str>>,
    /// Children ever created under this node: the sequential-suffix counter, kept apart from cversion.
    pub seq: i64,
    /// TTL in ms for TTL nodes, else 0.
    pub ttl: i64,
    /// Cached per-node digest (Keeper formula); 0 until computed.
    pub digest: u64,
}

impl Node {
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
