//! Node kinds and the corners of single ops: read errors, container and TTL nodes, writes
//! under Keeper's `/keeper`, and multiRead's allowed sub-ops.

use crate::scenario::flags::*;
use crate::scenario::*;

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "read_errors",
            about: "exists, getAcl and sync on missing nodes; sync does not check existence.",
            source: "ZooKeeper 3.8 FinalRequestProcessor (exists/getACL: NONODE; sync: path echoed)",
            steps: vec![
                s(0, exists("~/missing", false)),
                s(0, exists("~/missing/deeper", true)),
                s(0, get_acl("~/missing")),
                s(0, sync("~/missing")),
                s(0, create("~/here", "")),
                s(0, get_acl("~/here")),
                s(0, sync("~/here")),
                s(0, create("~/missing", "")),
            ],
        },
        Scenario {
            name: "container_nodes",
            about: "createContainer returns the stat; a container's owner is the container marker.",
            source: "ZooKeeper 3.5 CreateMode.CONTAINER (ZOOKEEPER-2163), EphemeralType.CONTAINER_EPHEMERAL_OWNER",
            // Collection after the last child goes is left out: ZooKeeper checks every 60 s
            // (znode.container.checkIntervalMs), too slow and timing-dependent for a scenario.
            steps: vec![
                s(0, create_as(OpCode::CreateContainer, "~/c", CONTAINER, 0)),
                s(0, exists("~/c", false)),
                s(0, create("~/c/child", "")),
                s(0, children2("~/c", false)),
                s(0, create_as(OpCode::CreateContainer, "~/c", CONTAINER, 0)),
                // The opcode, not the flags, makes a container in ZooKeeper 3.8.
                s(0, create_as(OpCode::CreateContainer, "~/c0", PERSISTENT, 0)),
                s(0, exists("~/c0", false)),
            ],
        },
        Scenario {
            name: "ttl_nodes",
            about: "createTTL with extended types on: a TTL node's stat; ttl 0 and a non-TTL mode are BADARGUMENTS.",
            source: "ZooKeeper 3.5 CreateMode.PERSISTENT_WITH_TTL (ZOOKEEPER-2169), EphemeralType.validateTTL",
            steps: vec![
                s(0, create_as(OpCode::CreateTtl, "~/t", PERSISTENT_WITH_TTL, 60_000)),
                s(0, exists("~/t", false)),
                s(0, create_as(OpCode::CreateTtl, "~/t0", PERSISTENT_WITH_TTL, 0)),
                s(0, create_as(OpCode::CreateTtl, "~/tp", PERSISTENT, 60_000)),
            ],
        },
        Scenario {
            name: "keeper_system_writes",
            about: "Writes under /keeper: Keeper refuses them on its system node; ZooKeeper has no /keeper.",
            source: "ClickHouse KeeperStorage.cpp (keeper_system_path checks); ZooKeeper DataTree (no /keeper)",
            steps: vec![
                s(0, create("/keeper/conformance_probe", "")),
                s(0, set("/keeper/api_version", "9", -1)),
                s(0, delete("/keeper/api_version", -1)),
            ],
        },
        Scenario {
            name: "multi_read_exists",
            about: "A multiRead holding exists: ZooKeeper 3.8 rejects the request (MARSHALLINGERROR).",
            source:
                "ZooKeeper 3.8 MultiOperationRecord (multiRead allows getData/getChildren only); Keeper allows exists",
            steps: vec![
                s(0, create("~/r", "v")),
                s(0, multi_read(vec![exists("~/r", false), get("~/r", false)])),
                s(0, multi_read(vec![get("~/r", false), exists("~/none", false)])),
                s(0, get("~/r", false)),
            ],
        },
    ]
}
