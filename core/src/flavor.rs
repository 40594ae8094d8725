//! Where ClickHouse Keeper and Apache ZooKeeper differ, as data: one switch per difference.
//!
//! Every field of [`Rules`] is documented in `docs/flavors.md` with its source. The state
//! machine and the request path (engine/dispatch.rs, engine/session.rs) ask the rules and never
//! branch on the flavor name; only per-flavor defaults (config.rs), the four-letter-word texts
//! (fourlw.rs) and Keeper's handshake-length check on the first bytes (net/conn.rs) do.

use std::fmt;
use std::str::FromStr;

use crate::unknown_name::UnknownName;

/// Which real server to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// ClickHouse Keeper (the default).
    Keeper,
    /// Apache ZooKeeper 3.8.
    Zookeeper,
}

impl FromStr for Flavor {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s {
            "keeper" => Ok(Flavor::Keeper),
            "zookeeper" | "zk" => Ok(Flavor::Zookeeper),
            other => Err(UnknownName::new("flavor", other, "'keeper' or 'zookeeper'")),
        }
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flavor::Keeper => "keeper",
            Flavor::Zookeeper => "zookeeper",
        })
    }
}

/// The behaviour switches of one flavor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub flavor: Flavor,
    /// ZooKeeper moves the parent's pzxid on child delete; Keeper does not
    /// (KeeperStorage.cpp remove; ClickHouse/ClickHouse#115457).
    pub delete_updates_parent_pzxid: bool,
    /// The sequential suffix counter is an i32 that can wrap negative (ZooKeeper) or an i64 (Keeper).
    pub seq_counter_i32: bool,
    /// ZooKeeper reports 0 as the ephemeralOwner of container and TTL nodes
    /// (DataNode.copyStat); Keeper reports what it stores.
    pub hide_special_owners: bool,
    /// multiRead sub-errors keep the op type with no body (Keeper, ClickHouse/ClickHouse#58747)
    /// instead of ZooKeeper's `{-1, err}` + ErrorResponse.
    pub multi_read_error_keeps_type: bool,
    /// The system nodes under `/zookeeper` include `config` (ZooKeeper 3.5+).
    pub zookeeper_config_node: bool,
    /// `/keeper/api_version` and `/keeper/feature_flags` exist (Keeper).
    pub keeper_system_nodes: bool,
    /// First session id handed out; Keeper counts from 1, ZooKeeper starts from a time-based id.
    pub first_session_id: i64,
    /// Keeper bumps the parent's cversion on every setData of a child (KeeperStorageImpl.cpp
    /// Set; ClickHouse/ClickHouse#115457). ZooKeeper does not.
    pub set_bumps_parent_cversion: bool,
    /// Session creation consumes a zxid in ZooKeeper (createSession txn); Keeper's SessionID
    /// request does not touch the storage zxid.
    pub create_session_consumes_zxid: bool,
    /// The root's client-visible cversion at startup: ZooKeeper shows -1 (2*creates - children,
    /// with `/zookeeper` added without a create), Keeper 0.
    pub root_initial_cversion: i32,
    /// Keeper refuses children under TTL nodes with BADARGUMENTS; ZooKeeper allows them.
    pub ttl_nodes_refuse_children: bool,
    /// Written paths are checked with ZooKeeper's `PathUtils.validatePath` (relative `.`/`..`
    /// segments, control, private-use and non-BMP characters refused); Keeper's storage
    /// refuses only an empty node name (see `path::validate_keeper`).
    pub zookeeper_path_rules: bool,
    /// Reads of the empty path answer the root: ZooKeeper's DataTree keeps the root under ""
    /// as well as "/". Keeper's storage has only "/", so "" is NONODE there.
    pub empty_path_is_root: bool,
    /// Keeper reserves `/keeper` and below: writes there are BADARGUMENTS.
    pub keeper_path_reserved: bool,
    /// The `ip` ACL scheme exists (ZooKeeper) or not (Keeper: world, auth, digest only).
    pub ip_acl_scheme: bool,
    /// A persistent-recursive watch event names the watched path (Keeper's storage does this)
    /// rather than the changed node (ZooKeeper).
    pub recursive_event_names_watch_path: bool,
    /// A persistent-recursive addWatch also registers in the child watch table (ZooKeeper's
    /// `DataTree.addWatch`), where it fires NodeDeleted for deleted descendants; Keeper keeps
    /// recursive watches in a table of their own (`KeeperStorage::processWatchesImpl`), so a
    /// delete below tells it once, like any other change.
    pub recursive_watch_in_child_table: bool,
    /// setWatches: a child watch whose node's pzxid moved fires NodeDataChanged (Keeper) rather
    /// than NodeChildrenChanged (ZooKeeper).
    pub set_watches_child_change_is_data_changed: bool,
    /// Null data (a -1 buffer) is stored and returned as null (ZooKeeper) or as empty (Keeper
    /// reads every buffer into a string).
    pub preserve_null_data: bool,
    /// ZooKeeper keeps one watch mode per (session, path) in each of its data and child watch
    /// tables, so a later one-shot watch on a path downgrades a persistent one there, and
    /// addWatch upgrades a one-shot (WatchManager.watcherModeManager, measured). Keeper keeps
    /// separate tables, so the kinds coexist.
    pub watch_mode_overwrites: bool,
    /// A closing session's ephemerals are deleted in java.util.HashSet order (ZooKeeper's
    /// per-session ephemeral set) rather than sorted; other sessions see the events in it.
    pub java_hashset_close_order: bool,
    /// Connection-level behaviour of ZooKeeper (true) or Keeper (false), measured on 3.8.0 and
    /// checked by tests/tests/zk_quirks.rs: resumption of a session by id and password, a
    /// random password, the readOnly byte echoed to a 45-byte handshake, refusal of a client
    /// that saw a newer zxid, an `ip` identity on every connection.
    pub zookeeper_sessions: bool,
    /// Which opcodes the server knows: ZooKeeper's (whoAmI, getEphemerals,
    /// getAllChildrenNumber) or Keeper's (500..507). Anything else is an unknown op.
    pub zookeeper_ops: bool,
    /// An unknown op gets UNIMPLEMENTED (zxid -1) before the close (ZooKeeper) or a bare close.
    pub unknown_op_replies: bool,
    /// multi accepts only create variants, delete, setData and check, multiRead only getData and
    /// getChildren; other sub-ops: MARSHALLINGERROR (ZooKeeper's MultiOperationRecord).
    pub multi_sub_ops_restricted: bool,
    /// Auth replies carry zxid 0, and AUTHFAILED closes the connection (ZooKeeper); Keeper
    /// answers with the last zxid and keeps the connection.
    pub auth_zookeeper_style: bool,
    /// closeSession is answered before the socket closes (ZooKeeper) or not at all (Keeper).
    pub close_is_answered: bool,
    /// A standalone check (op 13, 501, 504) is served like a read without a zxid (Keeper), or
    /// is a write whose success ZooKeeper never answers (its reply serializer fails).
    pub standalone_check_is_read: bool,
    /// setWatches: the reply goes before the catch-up events (Keeper) or after them (ZooKeeper).
    pub set_watches_reply_first: bool,
    /// checkWatches asks whether any session has a watch of that type on the path (ZooKeeper
    /// 3.8, measured: the server ignores who asks) or whether the asking session has one.
    pub check_watches_any_session: bool,
    /// A request whose body does not decode is answered MARSHALLINGERROR and the connection
    /// stays (ZooKeeper, measured) or the connection is closed (Keeper's deserializer throws).
    pub malformed_request_answered: bool,
    /// ZooKeeper 3.9 (ZOOKEEPER-4026, apache/zookeeper#1978): a create2 inside a multi answers
    /// with a create2 result and the node's stat; 3.8.0 answers a plain create (no stat).
    pub multi_create2_stat: bool,
    /// ZooKeeper 3.9 (ZOOKEEPER-4655, apache/zookeeper#1950): a NodeCreated, NodeDeleted,
    /// NodeDataChanged or NodeChildrenChanged notification carries the zxid of the change in
    /// its reply header; 3.8.0 sends -1.
    pub watch_event_zxid: bool,
}

/// Which Apache ZooKeeper release the zookeeper flavor answers as (`--zookeeper-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ZookeeperVersion {
    /// 3.8.0, Debian 12's `zookeeper`: the release the differential tests run against, and
    /// the golden transcript's.
    #[default]
    V3_8_0,
    /// The 3.9 line: 3.8.0 plus the client-visible changes listed on [`Rules`]
    /// (`multi_create2_stat`, `watch_event_zxid`, and `watch_mode_overwrites` off).
    V3_9,
}

impl FromStr for ZookeeperVersion {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s.trim() {
            "3.8.0" | "3.8" => Ok(ZookeeperVersion::V3_8_0),
            "3.9" => Ok(ZookeeperVersion::V3_9),
            other => Err(UnknownName::new("ZooKeeper version", other, "3.8.0 or 3.9")),
        }
    }
}

impl fmt::Display for ZookeeperVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ZookeeperVersion::V3_8_0 => "3.8.0",
            ZookeeperVersion::V3_9 => "3.9",
        })
    }
}

impl Rules {
    /// These rules as ZooKeeper `version` answers (the zookeeper flavor only; Keeper's rules
    /// are Keeper's whatever the version).
    pub fn for_zookeeper_version(mut self, version: ZookeeperVersion) -> Rules {
        if self.flavor == Flavor::Zookeeper && version == ZookeeperVersion::V3_9 {
            self.multi_create2_stat = true;
            self.watch_event_zxid = true;
            // ZOOKEEPER-4466: 3.9's WatchManager keeps a set of modes per (watcher, path)
            // (`WatchStats`), so a one-shot, a persistent and a recursive watch on one path
            // coexist instead of the last one replacing the others.
            self.watch_mode_overwrites = false;
        }
        self
    }

    /// The rules of `flavor`, with the session id base given by the caller (time-derived for
    /// ZooKeeper, decided once at startup so the core itself never reads a clock).
    pub fn new(flavor: Flavor, zk_session_base: i64) -> Rules {
        match flavor {
            Flavor::Keeper => Rules {
                flavor,
                delete_updates_parent_pzxid: false,
                seq_counter_i32: false,
                hide_special_owners: false,
                multi_read_error_keeps_type: true,
                zookeeper_config_node: false,
                keeper_system_nodes: true,
                first_session_id: 1,
                set_bumps_parent_cversion: true,
                create_session_consumes_zxid: false,
                root_initial_cversion: 0,
                ttl_nodes_refuse_children: true,
                keeper_path_reserved: true,
                zookeeper_path_rules: false,
                empty_path_is_root: false,
                ip_acl_scheme: false,
                recursive_event_names_watch_path: true,
                recursive_watch_in_child_table: false,
                set_watches_child_change_is_data_changed: true,
                set_watches_reply_first: true,
                preserve_null_data: false,
                watch_mode_overwrites: false,
                java_hashset_close_order: false,
                zookeeper_sessions: false,
                zookeeper_ops: false,
                unknown_op_replies: false,
                multi_sub_ops_restricted: false,
                auth_zookeeper_style: false,
                close_is_answered: false,
                standalone_check_is_read: true,
                check_watches_any_session: false,
                malformed_request_answered: false,
                multi_create2_stat: false,
                watch_event_zxid: false,
            },
            Flavor::Zookeeper => Rules {
                flavor,
                delete_updates_parent_pzxid: true,
                seq_counter_i32: true,
                hide_special_owners: true,
                multi_read_error_keeps_type: false,
                zookeeper_config_node: true,
                keeper_system_nodes: false,
                first_session_id: zk_session_base,
                set_bumps_parent_cversion: false,
                create_session_consumes_zxid: true,
                root_initial_cversion: -1,
                ttl_nodes_refuse_children: false,
                keeper_path_reserved: false,
                zookeeper_path_rules: true,
                empty_path_is_root: true,
                ip_acl_scheme: true,
                recursive_event_names_watch_path: false,
                recursive_watch_in_child_table: true,
                set_watches_child_change_is_data_changed: false,
                set_watches_reply_first: false,
                preserve_null_data: true,
                watch_mode_overwrites: true,
                java_hashset_close_order: true,
                zookeeper_sessions: true,
                zookeeper_ops: true,
                unknown_op_replies: true,
                multi_sub_ops_restricted: true,
                auth_zookeeper_style: true,
                close_is_answered: true,
                standalone_check_is_read: false,
                check_watches_any_session: true,
                malformed_request_answered: true,
                multi_create2_stat: false,
                watch_event_zxid: false,
            },
        }
    }

    /// Whether the flavor's real server knows `op` at all.
    /// (The op's line in the per-op table, `testkeeper_wire::opcode`, says which servers know it.)
    pub fn knows_op(&self, op: testkeeper_wire::OpCode) -> bool {
        use testkeeper_wire::opcode::Servers;
        match op.servers() {
            Servers::Both => true,
            Servers::ZooKeeper => self.zookeeper_ops,
            Servers::Keeper => !self.zookeeper_ops,
            Servers::Neither => false,
        }
    }

    /// Formats a sequential suffix from the parent's counter, as the flavor's server does.
    pub fn seq_suffix(&self, counter: i64) -> String {
        if self.seq_counter_i32 {
            // Java's String.format("%010d", int): the counter is an int and wraps.
            let v = counter as i32;
            if v < 0 {
                format!("-{:09}", -(v as i64))
            } else {
                format!("{v:010}")
            }
        } else {
            format!("{counter:010}")
        }
    }
}

/// ZooKeeper's first session id: `(ms << 24) >>> 8 | serverId << 56`; a standalone server's
/// session tracker uses server id 1, so ids look like `0x01xx...`.
pub fn zookeeper_session_base(now_ms: i64) -> i64 {
    ((((now_ms as u64) << 24) >> 8) | (1u64 << 56)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_suffix_formats() {
        let zk = Rules::new(Flavor::Zookeeper, 0);
        let keeper = Rules::new(Flavor::Keeper, 0);
        assert_eq!(zk.seq_suffix(1), "0000000001");
        assert_eq!(keeper.seq_suffix(42), "0000000042");
        assert_eq!(zk.seq_suffix(i32::MAX as i64 + 1), "-2147483648");
        assert_eq!(zk.seq_suffix(-1), "-000000001");
        assert_eq!(keeper.seq_suffix(10_000_000_000), "10000000000");
        assert_eq!("zookeeper".parse::<Flavor>(), Ok(Flavor::Zookeeper));
        assert!("etcd".parse::<Flavor>().is_err());
    }
}
