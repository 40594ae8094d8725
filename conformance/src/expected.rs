//! Known differences between ClickHouse Keeper and Apache ZooKeeper 3.8, as data: each entry
//! names the transcript keys it may change, where it shows (scenarios, ops, paths), why, and
//! its source. They apply only when the two sides' flavors differ; between two servers of one
//! flavor every difference is a failure. The conformance diff and the proxy's cross-check
//! read the same table (the proxy has no scenario: only entries without a scenario list
//! apply there).

/// One known, sourced difference.
#[derive(Debug, Clone)]
pub struct KnownDifference {
    pub id: &'static str,
    /// The difference, in a sentence: printed with the id wherever it is reported.
    pub what: &'static str,
    pub source: &'static str,
    /// Scenarios where it shows (a trailing `*` matches a prefix); empty for any.
    pub scenarios: &'static [&'static str],
    /// Ops where it shows: a transcript op's first word (`exists`, `multi`, `resume`, `4lw`,
    /// `raw`...); empty for any.
    pub ops: &'static [&'static str],
    /// Path prefixes the op must name (`/keeper`); empty for any.
    pub paths: &'static [&'static str],
    /// Flattened keys it may change: a key matches when it ends with one of these (`*`: any).
    pub keys: &'static [&'static str],
}

/// Where a difference was seen: the scenario (none in the proxy), the op's first word and
/// its first path.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    pub scenario: Option<&'a str>,
    pub op: &'a str,
    pub path: Option<&'a str>,
}

impl<'a> Site<'a> {
    /// The site of a transcript line: `op` is its op text, `session` its session label.
    pub fn of(scenario: Option<&'a str>, session: &'a str, op: &'a str) -> Site<'a> {
        let mut words = op.split_whitespace();
        let first = words.next().unwrap_or("");
        match session {
            "4lw" | "raw" | "race" => Site { scenario, op: session, path: None },
            _ => Site { scenario, op: first, path: words.next().filter(|p| p.starts_with('/')) },
        }
    }
}

impl KnownDifference {
    /// Whether this entry explains a difference in `key` at `site`.
    pub fn covers(&self, site: &Site<'_>, key: &str) -> bool {
        let scenario_ok = self.scenarios.is_empty()
            || site.scenario.is_some_and(|s| {
                self.scenarios.iter().any(|p| match p.strip_suffix('*') {
                    Some(prefix) => s.starts_with(prefix),
                    None => s == *p,
                })
            });
        let op_ok = self.ops.is_empty() || self.ops.contains(&site.op);
        let path_ok = self.paths.is_empty()
            || site
                .path
                .is_some_and(|p| self.paths.iter().any(|prefix| p == *prefix || p.starts_with(&format!("{prefix}/"))));
        let key_ok = self.keys.iter().any(|k| *k == "*" || key == *k || key.ends_with(&format!(".{k}")));
        scenario_ok && op_ok && path_ok && key_ok
    }
}

/// The entry with this id.
pub fn by_id(id: &str) -> Option<&'static KnownDifference> {
    TABLE.iter().find(|d| d.id == id)
}

/// The entry that explains `key` at `site`, if any.
pub fn explain(site: &Site<'_>, key: &str) -> Option<&'static KnownDifference> {
    TABLE.iter().find(|d| d.covers(site, key))
}

const NONE: &[&str] = &[];

/// The table. Sources: `core/src/flavor.rs` (`Rules`), docs/flavors.md and
/// `docs/research/keeper-ext-wire.md`, which cite the upstream code for each.
pub const TABLE: &[KnownDifference] = &[
    KnownDifference {
        id: "delete-keeps-parent-pzxid",
        what: "Keeper does not move the parent's pzxid when a child is deleted (also by a session's end); ZooKeeper does.",
        source: "KeeperStorage.cpp remove; ClickHouse/ClickHouse#115457; flavor.rs delete_updates_parent_pzxid",
        scenarios: NONE,
        ops: NONE,
        paths: NONE,
        keys: &["pzxid"],
    },
    KnownDifference {
        id: "set-bumps-parent-cversion",
        what: "Keeper bumps the parent's cversion on a child's setData; ZooKeeper does not.",
        source: "KeeperStorageImpl.cpp Set; ClickHouse/ClickHouse#115457; flavor.rs set_bumps_parent_cversion",
        scenarios: NONE,
        ops: NONE,
        paths: NONE,
        keys: &["cversion"],
    },
    KnownDifference {
        id: "multi-read-error-keeps-type",
        what: "Keeper's multiRead sub-error keeps the op type ({op, err}, no body); ZooKeeper sends {-1, err}.",
        source: "ClickHouse/ClickHouse#58747; docs/research/keeper-ext-wire.md section 2",
        scenarios: NONE,
        ops: &["multiRead"],
        paths: NONE,
        keys: &["op"],
    },
    KnownDifference {
        id: "system-nodes",
        what: "Keeper has /keeper (api_version, feature_flags) and no /zookeeper/config; the root's cversion starts at 0, not -1.",
        source: "KeeperContext.cpp system nodes; flavor.rs zookeeper_config_node, keeper_system_nodes, root_initial_cversion",
        scenarios: NONE,
        ops: NONE,
        paths: &["/", "/keeper", "/zookeeper"],
        keys: &["*"],
    },
    KnownDifference {
        id: "keeper-path-names",
        what: "Keeper refuses only an empty node name; `.`, `..` and other names ZooKeeper's PathUtils.validatePath refuses are plain names there.",
        source: "KeeperStorage create preprocess (getBaseNodeName(...).empty()); ZooKeeper PathUtils.validatePath; docs/flavors.md",
        scenarios: &["create_path_validation"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "keeper-path-reserved",
        what: "Keeper answers BADARGUMENTS to writes under /keeper; ZooKeeper has no /keeper (NONODE).",
        source: "KeeperStorage.cpp (keeper_system_path checks); flavor.rs keeper_path_reserved",
        scenarios: &["keeper_system_writes"],
        ops: NONE,
        paths: NONE,
        keys: &["err"],
    },
    KnownDifference {
        id: "session-timeout-bounds",
        what: "Keeper negotiates session timeouts into [10000, 100000] ms (0 asks for 30000); ZooKeeper into [2, 20] x tickTime.",
        source: "Keeper CoordinationSettings min/max_session_timeout_ms; ZooKeeperServer.processConnectRequest",
        scenarios: NONE,
        ops: &["connect", "resume"],
        paths: NONE,
        keys: &["negotiated_timeout_ms"],
    },
    KnownDifference {
        id: "no-session-resumption",
        what: "Keeper ignores the session id of a reconnecting client and hands out a new session; the old one lives until it expires (its ephemerals then show an earlier session as owner). ZooKeeper resumes the session, or answers SESSIONEXPIRED.",
        source: "ClickHouse/ClickHouse#116690, #44571; KeeperTCPHandler (previous_session_id ignored); flavor.rs zookeeper_sessions",
        scenarios: NONE,
        ops: &["resume"],
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "no-session-resumption-owner",
        what: "After a reconnect Keeper's session is a new one, so the old session's ephemerals show an earlier session as owner.",
        source: "ClickHouse/ClickHouse#116690; flavor.rs zookeeper_sessions",
        scenarios: &["session_resume_keeps_ephemerals", "cluster_session_moves"],
        ops: NONE,
        paths: NONE,
        keys: &["ephemeralOwner"],
    },
    KnownDifference {
        id: "recursive-event-names-watch-path",
        what: "Keeper sends a persistent-recursive event for every watched ancestor, each naming that ancestor; ZooKeeper one per session, naming the changed node.",
        source: "KeeperStorage::processWatchesImpl (persistent_recursive_watches); ZooKeeper WatchManager; flavor.rs recursive_event_names_watch_path",
        scenarios: &["watch_persistent_recursive", "watch_recursive_subtree"],
        ops: NONE,
        paths: NONE,
        keys: &["events"],
    },
    KnownDifference {
        id: "special-owners-visible",
        what: "Keeper shows the stored ephemeralOwner of container and TTL nodes (the container marker); ZooKeeper shows 0.",
        source: "ZooKeeper DataTree.copyStat (getClientEphemeralOwner); ClickHouse PR #108908; flavor.rs hide_special_owners",
        scenarios: &["container_*", "ttl_*"],
        ops: NONE,
        paths: NONE,
        keys: &["ephemeralOwner"],
    },
    KnownDifference {
        id: "ttl-nodes-refuse-children",
        what: "Keeper refuses children of TTL nodes (BADARGUMENTS); ZooKeeper allows them.",
        source: "ClickHouse PR #100397; flavor.rs ttl_nodes_refuse_children",
        scenarios: &["ttl_children_and_collection"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "multi-read-allows-exists",
        what: "Keeper serves exists inside multiRead; ZooKeeper 3.8 rejects the request with MARSHALLINGERROR.",
        source: "ZooKeeper MultiOperationRecord (getData/getChildren only); ClickHouse ZooKeeperMultiRequest",
        scenarios: &["multi_read_exists"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "multi-sub-ops-unrestricted",
        what: "Keeper takes any op it parses inside a multi (a read fails its op with BADARGUMENTS, setACL applies); ZooKeeper 3.8 rejects the whole request with MARSHALLINGERROR.",
        source: "ZooKeeper MultiOperationRecord.deserialize; flavor.rs multi_sub_ops_restricted",
        scenarios: &["multi_read_op_in_write_multi", "multi_set_acl_not_allowed"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "set-watches-child-change-is-data-changed",
        what: "Keeper's setWatches catch-up fires NodeDataChanged for a moved child watch; ZooKeeper NodeChildrenChanged.",
        source: "KeeperStorage setWatches; flavor.rs set_watches_child_change_is_data_changed",
        scenarios: &["watch_set_watches_reconnect"],
        ops: NONE,
        paths: NONE,
        keys: &["events"],
    },
    KnownDifference {
        id: "watch-modes-coexist",
        what: "In Keeper a one-shot watch and a persistent watch of one session on one node coexist; in ZooKeeper the one-shot replaces the persistent mode.",
        source: "ZooKeeper WatcherModeManager; flavor.rs watch_mode_overwrites",
        scenarios: &["watch_persistent_and_one_shot_same_session"],
        ops: NONE,
        paths: NONE,
        keys: &["events"],
    },
    KnownDifference {
        id: "check-watches-asks-for-the-session",
        what: "Keeper's checkWatches asks about the calling session's watches; ZooKeeper 3.8's server answers OK when any session has such a watch.",
        source: "measured on ZooKeeper 3.8.0 (FinalRequestProcessor checkWatches); flavor.rs check_watches_any_session",
        scenarios: &["watch_check_without_watch"],
        ops: &["checkWatches"],
        paths: NONE,
        keys: &["err", "ok"],
    },
    KnownDifference {
        id: "no-ip-acl-scheme",
        what: "Keeper has no ip ACL scheme (INVALIDACL); ZooKeeper matches ip ACLs by network.",
        source: "ClickHouse Keeper docs (world, auth, digest); ZooKeeper IPAuthenticationProvider; flavor.rs ip_acl_scheme",
        scenarios: &["acl_ip_scheme"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "failed-auth-keeps-connection",
        what: "After AUTHFAILED Keeper keeps the connection; ZooKeeper closes it.",
        source: "KeeperTCPHandler; measured on ZooKeeper 3.8.0; flavor.rs auth_zookeeper_style",
        scenarios: &["acl_failed_auth"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "zookeeper-only-ops",
        what: "getEphemerals, getAllChildrenNumber and whoAmI are unknown to Keeper, which closes the connection.",
        source: "ClickHouse ZooKeeperConstants.cpp (OpNum); flavor.rs zookeeper_ops",
        scenarios: &["session_get_ephemerals", "session_all_children_number", "session_who_am_i"],
        ops: NONE,
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "malformed-request-closes",
        what: "Keeper closes the connection on a request body that does not decode; ZooKeeper answers MARSHALLINGERROR and keeps it.",
        source: "ClickHouse ZooKeeperCommon.cpp (deserializer throws); measured on ZooKeeper 3.8.0; flavor.rs malformed_request_answered",
        scenarios: &["truncated_request_body"],
        ops: &["raw"],
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "unknown-opcode-closes",
        what: "Keeper closes the connection on an unknown opcode without a reply; ZooKeeper answers UNIMPLEMENTED first.",
        source: "KeeperTCPHandler; ZooKeeper UnimplementedRequestProcessor; flavor.rs unknown_op_replies",
        scenarios: NONE,
        ops: &["raw"],
        paths: NONE,
        keys: &["reply", "err"],
    },
    KnownDifference {
        id: "close-not-answered",
        what: "Keeper closes the socket on closeSession without a reply; ZooKeeper answers first.",
        source: "KeeperTCPHandler (close_xid); measured on ZooKeeper 3.8.0; flavor.rs close_is_answered",
        scenarios: NONE,
        ops: &["closeSession"],
        paths: NONE,
        keys: &["*"],
    },
    KnownDifference {
        id: "keeper-4lw-format",
        what: "Keeper's four-letter words have their own keys (srvr/stat: 'ClickHouse Keeper version'; dirs: snapshot_dir_size, log_dir_size).",
        source: "ClickHouse FourLetterCommand.cpp; ZooKeeper FourLetterCommands",
        scenarios: NONE,
        ops: &["4lw"],
        paths: NONE,
        keys: &["keys", "shape", "standard_keys"],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_scope_the_entries() {
        let exists = Site::of(Some("stat_after_delete"), "s0", "exists ~/p");
        assert_eq!(explain(&exists, "result.stat.pzxid").map(|d| d.id), Some("delete-keeps-parent-pzxid"));
        assert!(explain(&exists, "result.data").is_none());
        let root = Site::of(Some("system_root"), "s0", "children2 /");
        assert_eq!(explain(&root, "result.children").map(|d| d.id), Some("system-nodes"));
        let four = Site::of(None, "4lw", "srvr");
        assert_eq!(explain(&four, "result.keys").map(|d| d.id), Some("keeper-4lw-format"));
        let container = Site::of(Some("container_in_multi"), "s0", "exists ~/c");
        assert_eq!(explain(&container, "result.stat.ephemeralOwner").map(|d| d.id), Some("special-owners-visible"));
        // No scenario (the proxy): scenario-scoped entries do not apply.
        assert!(explain(&Site::of(None, "s0", "exists ~/c"), "result.stat.ephemeralOwner").is_none());
        let ids: std::collections::BTreeSet<_> = TABLE.iter().map(|d| d.id).collect();
        assert_eq!(ids.len(), TABLE.len(), "ids are unique");
    }
}
