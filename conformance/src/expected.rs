//! Known differences between ClickHouse Keeper and Apache ZooKeeper 3.8, as data: each entry
//! names the transcript keys it may change, the scenarios where it shows, and its source.
//! They apply only when the target's and the reference's flavors differ; between two servers
//! of one flavor every difference is a failure.

/// One known, sourced difference.
#[derive(Debug, Clone)]
pub struct KnownDifference {
    pub id: &'static str,
    pub what: &'static str,
    pub source: &'static str,
    /// Scenarios where it shows (`*` for any).
    pub scenarios: &'static [&'static str],
    /// Flattened keys it may change: a key matches when it ends with one of these.
    pub keys: &'static [&'static str],
}

impl KnownDifference {
    /// Whether this entry explains a difference in `key`.
    pub fn covers(&self, key: &str) -> bool {
        self.keys.iter().any(|k| *k == "*" || key == *k || key.ends_with(&format!(".{k}")))
    }
}

/// The table. Sources: `server/src/core/flavor.rs` (`Rules`) and
/// `docs/research/keeper-ext-wire.md`, which cite the upstream code for each.
pub const TABLE: &[KnownDifference] = &[
    KnownDifference {
        id: "delete-keeps-parent-pzxid",
        what: "Keeper does not move the parent's pzxid when a child is deleted; ZooKeeper does.",
        source: "KeeperStorage.cpp remove; ClickHouse/ClickHouse#115457; flavor.rs delete_updates_parent_pzxid",
        scenarios: &["create_get_set_delete", "ephemerals_after_close", "ch_keepermap_rows"],
        keys: &["pzxid"],
    },
    KnownDifference {
        id: "set-bumps-parent-cversion",
        what: "Keeper bumps the parent's cversion on a child's setData; ZooKeeper does not.",
        source: "KeeperStorageImpl.cpp Set; ClickHouse/ClickHouse#115457; flavor.rs set_bumps_parent_cversion",
        scenarios: &["ch_keepermap_rows"],
        keys: &["cversion"],
    },
    KnownDifference {
        id: "multi-read-error-keeps-type",
        what: "Keeper's multiRead sub-error keeps the op type ({op, err}, no body); ZooKeeper sends {-1, err}.",
        source: "ClickHouse/ClickHouse#58747; docs/research/keeper-ext-wire.md section 2",
        scenarios: &["multi_read"],
        keys: &["op"],
    },
    KnownDifference {
        id: "system-nodes",
        what: "Keeper has /keeper/api_version and no /zookeeper/config; the root's cversion starts at 0, not -1.",
        source: "flavor.rs zookeeper_config_node, keeper_system_nodes, root_initial_cversion",
        scenarios: &["system_nodes"],
        keys: &["*"],
    },
    KnownDifference {
        id: "session-timeout-bounds",
        what: "Keeper clamps session timeouts to [10000, 100000] ms by default; ZooKeeper to [2, 20] x tickTime.",
        source: "Keeper CoordinationSettings min/max_session_timeout_ms; ZooKeeperServer.processConnectRequest",
        scenarios: &["session_timeout_negotiation"],
        keys: &["negotiated_timeout_ms"],
    },
    KnownDifference {
        id: "recursive-event-names-watch-path",
        what: "Keeper's persistent-recursive events name the watched path, ZooKeeper's the changed node.",
        source: "KeeperStorage watch triggering; flavor.rs recursive_event_names_watch_path",
        scenarios: &["watch_persistent_recursive"],
        keys: &["events"],
    },
    KnownDifference {
        id: "special-owners-visible",
        what: "Keeper shows the stored ephemeralOwner of container and TTL nodes; ZooKeeper shows 0.",
        source: "ZooKeeper DataTree.copyStat (getClientEphemeralOwner); flavor.rs hide_special_owners",
        scenarios: &["container_nodes", "ttl_nodes"],
        keys: &["ephemeralOwner"],
    },
    KnownDifference {
        id: "keeper-path-reserved",
        what: "Keeper answers BADARGUMENTS to writes under /keeper; ZooKeeper has no /keeper (NONODE).",
        source: "KeeperStorage.cpp (keeper_system_path checks); flavor.rs keeper_path_reserved",
        scenarios: &["keeper_system_writes"],
        keys: &["err"],
    },
    KnownDifference {
        id: "multi-read-allows-exists",
        what: "Keeper serves exists inside multiRead; ZooKeeper 3.8 rejects the request with MARSHALLINGERROR.",
        source: "ZooKeeper MultiOperationRecord (getData/getChildren only); ClickHouse ZooKeeperMultiRequest",
        scenarios: &["multi_read_exists"],
        keys: &["*"],
    },
    KnownDifference {
        id: "set-watches-child-change-is-data-changed",
        what:
            "Keeper's setWatches catch-up fires NodeDataChanged for a moved child watch; ZooKeeper NodeChildrenChanged.",
        source: "KeeperStorage setWatches; flavor.rs set_watches_child_change_is_data_changed",
        scenarios: &["watch_set_watches_reconnect"],
        keys: &["events"],
    },
];

/// The entry with this id.
pub fn by_id(id: &str) -> Option<&'static KnownDifference> {
    TABLE.iter().find(|d| d.id == id)
}

/// The entries that apply to `scenario`.
pub fn for_scenario(scenario: &str) -> Vec<&'static KnownDifference> {
    TABLE.iter().filter(|d| d.scenarios.iter().any(|s| *s == "*" || *s == scenario)).collect()
}
