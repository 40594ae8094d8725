//! Single-op semantics: success, the main error codes, exact stats, and session basics.

use crate::ops::AclKind;
use crate::scenario::flags::*;
use crate::scenario::*;

const ZK: &str = "ZooKeeper 3.8 PrepRequestProcessor.java / DataTree.java";

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "create_get_set_delete",
            about: "Each basic op succeeds with exact stats: versions, cversion, numChildren, zxid order.",
            source: ZK,
            steps: vec![
                s(0, create("~/a", "one")),
                s(0, get("~/a", false)),
                s(0, set("~/a", "two", 0)),
                s(0, set("~/a", "three", -1)),
                s(0, get("~/a", false)),
                s(0, create("~/a/b", "")),
                s(0, children2("~/a", false)),
                s(0, exists("~/a", false)),
                s(0, delete("~/a/b", 0)),
                s(0, exists("~/a", false)),
                s(0, delete("~/a", 2)),
                s(0, exists("~/a", false)),
                s(0, sync("~")),
            ],
        },
        Scenario {
            name: "main_errors",
            about: "NONODE, NODEEXISTS, BADVERSION, NOTEMPTY, NOCHILDRENFOREPHEMERALS and BADARGUMENTS.",
            source: ZK,
            steps: vec![
                s(0, get("~/missing", false)),
                s(0, create("~/missing/child", "")),
                s(0, set("~/missing", "x", -1)),
                s(0, delete("~/missing", -1)),
                s(0, create("~/a", "")),
                s(0, create("~/a", "")),
                s(0, set("~/a", "x", 7)),
                s(0, delete("~/a", 7)),
                s(0, create("~/a/b", "")),
                s(0, delete("~/a", -1)),
                s(0, create_f("~/e", "", EPHEMERAL)),
                s(0, create("~/e/child", "")),
                s(0, create("~/bad/", "")),
                s(0, create("relative", "")),
                s(0, check("~/a", 3)),
                s(0, delete("~/a/b", -1)),
            ],
        },
        Scenario {
            name: "sequential_suffixes",
            about: "Sequential suffixes are 10 digits from the parent's counter, shared by all prefixes.",
            source: "ZooKeeper PrepRequestProcessor (parentCVersion suffix); seeds/000 query-NNNNNNNNNN",
            steps: vec![
                s(0, create_f("~/q-", "", SEQUENTIAL)),
                s(0, create_f("~/q-", "", SEQUENTIAL)),
                s(0, create_f("~/other-", "", SEQUENTIAL)),
                s(0, create("~/plain", "")),
                s(0, create_f("~/q-", "", EPHEMERAL_SEQUENTIAL)),
                s(0, delete("~/q-0000000000", -1)),
                s(0, create_f("~/q-", "", SEQUENTIAL)),
                s(0, children2("~", false)),
            ],
        },
        Scenario {
            name: "ephemerals_after_close",
            about: "A session's ephemerals vanish when it closes; owner shows as the session.",
            source: ZK,
            steps: vec![
                s(1, create_f("~/eph", "x", EPHEMERAL)),
                s(0, exists("~/eph", true)),
                s(0, children("~", true)),
                Step::Close(1),
                s(0, exists("~/eph", false)),
                s(0, children2("~", false)),
            ],
        },
        Scenario {
            name: "multi_error_vectors",
            about: "A failed multi applies nothing: earlier ops report OK, the failing one its code, later ones RUNTIMEINCONSISTENCY.",
            source: "ZooKeeper MultiResponse / PrepRequestProcessor multi rollback",
            steps: vec![
                s(0, multi(vec![create("~/m", ""), create("~/m/a", ""), set("~/m", "x", 5), create("~/m/b", "")])),
                s(0, exists("~/m", false)),
                s(0, multi(vec![create("~/m", "x"), create("~/m/a", ""), check("~/m", 0), set("~/m", "y", 0)])),
                s(0, children2("~/m", false)),
                s(0, multi(vec![delete("~/m/a", -1), delete("~/m", -1), delete("~/nope", -1)])),
                s(0, multi(vec![])),
                s(0, multi(vec![delete("~/m/a", -1), delete("~/m", -1)])),
            ],
        },
        Scenario {
            name: "multi_read",
            about: "multiRead returns each read's result or its error in place.",
            source: "ZooKeeper 3.6+ OpCode.multiRead; ClickHouse/ClickHouse#58747 for Keeper's error form",
            steps: vec![
                s(0, create("~/r", "v")),
                // getData and getChildren only: ZooKeeper 3.8 answers MARSHALLINGERROR for any other
                // op inside a multiRead (MultiOperationRecord), which testkeeper does not yet do.
                s(0, multi_read(vec![get("~/r", false), children("~", false), get("~/none", false), children("~/r", false)])),
            ],
        },
        Scenario {
            name: "acl_and_auth",
            about: "digest auth, creator ACLs, NOAUTH for others, INVALIDACL, setAcl versions.",
            source: "ZooKeeper PrepRequestProcessor.fixupACL / checkACL",
            steps: vec![
                s(1, create_acl("~/noauth", "", AclKind::Creator)),
                s(1, create_acl("~/badworld", "", AclKind::BadWorld)),
                s(0, digest_auth("user:secret")),
                s(0, create_acl("~/mine", "private", AclKind::Creator)),
                s(0, get_acl("~/mine")),
                s(0, get("~/mine", false)),
                s(1, get("~/mine", false)),
                s(1, set("~/mine", "x", -1)),
                s(1, exists("~/mine", false)),
                s(0, create_acl("~/ro", "", AclKind::ReadOnly)),
                s(0, set("~/ro", "x", -1)),
                s(0, create("~/ro/child", "")),
                s(0, set_acl("~/ro", AclKind::Open, 5)),
                s(0, set_acl("~/mine", AclKind::Open, 0)),
                s(1, get("~/mine", false)),
                s(1, get_acl("~/mine")),
            ],
        },
        Scenario {
            name: "system_nodes",
            about: "The root and the system nodes a client can read.",
            source: "ZooKeeper ZooDefs (/zookeeper, /zookeeper/quota, /zookeeper/config); Keeper /keeper/api_version",
            steps: vec![
                s(0, exists("/zookeeper", false)),
                s(0, children("/zookeeper", false)),
                s(0, get("/zookeeper/quota", false)),
                s(0, exists("/zookeeper/config", false)),
                s(0, exists("/keeper/api_version", false)),
                s(0, get_acl("/")),
            ],
        },
        Scenario {
            name: "session_timeout_negotiation",
            about: "Requested session timeouts are clamped into the server's bounds.",
            source: "ZooKeeper ZooKeeperServer.processConnectRequest (min 2*tickTime, max 20*tickTime)",
            steps: vec![Step::Connect(0, 30_000), Step::Connect(1, 1), Step::Connect(2, 10_000_000)],
        },
    ]
}
