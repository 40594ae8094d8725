//! Watches: which event, on which path, to whom, in what order, and exactly once.

use crate::scenario::flags::*;
use crate::scenario::*;

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "watch_one_shot",
            about: "Data, exists and child watches fire once each, with the right type and path.",
            source: "ZooKeeper WatchManager / DataTree.setData, createNode, deleteNode",
            steps: vec![
                s(0, create("~/w", "")),
                s(1, get("~/w", true)),
                s(1, exists("~/new", true)),
                s(1, children("~", true)),
                s(0, set("~/w", "1", -1)),
                s(0, set("~/w", "2", -1)),
                s(0, create("~/new", "")),
                s(0, create("~/more", "")),
                s(1, get("~/w", true)),
                s(1, children("~/w", true)),
                s(0, delete("~/w", -1)),
            ],
        },
        Scenario {
            name: "watch_multi_order",
            about: "A multi's events arrive after its reply, in op order, each watch once.",
            source: "ZooKeeper DataTree.processTxn (multi) / FinalRequestProcessor",
            steps: vec![
                s(0, create("~/x", "")),
                s(1, get("~/x", true)),
                s(1, children("~/x", true)),
                s(1, exists("~/x/y", true)),
                s(0, multi(vec![create("~/x/y", ""), set("~/x", "d", -1), delete("~/x/y", -1)])),
                s(0, set("~/x", "again", -1)),
            ],
        },
        Scenario {
            name: "watch_persistent",
            about: "A persistent watch fires for every change of its node and stays.",
            source: "ZooKeeper 3.6 addWatch PERSISTENT (ZOOKEEPER-1416)",
            steps: vec![
                s(0, create("~/p", "")),
                s(1, add_watch("~/p", 0)),
                s(0, set("~/p", "1", -1)),
                s(0, set("~/p", "2", -1)),
                s(0, create("~/p/c", "")),
                s(0, delete("~/p/c", -1)),
                s(0, delete("~/p", -1)),
                s(0, create("~/p", "")),
            ],
        },
        Scenario {
            name: "watch_persistent_recursive",
            about: "A persistent recursive watch sees changes anywhere below, never child events.",
            source: "ZooKeeper 3.6 addWatch PERSISTENT_RECURSIVE (ZOOKEEPER-1416)",
            steps: vec![
                s(0, create("~/r", "")),
                s(1, add_watch("~/r", 1)),
                s(0, create("~/r/a", "")),
                s(0, create("~/r/a/b", "")),
                s(0, set("~/r/a/b", "x", -1)),
                s(0, delete("~/r/a/b", -1)),
                s(0, create_f("~/r/e", "", EPHEMERAL)),
                Step::Close(0),
            ],
        },
        Scenario {
            name: "watch_set_watches_reconnect",
            about: "setWatches on a new session: changes since the given zxid fire at once, the rest register.",
            source: "ZooKeeper DataTree.setWatches (relativeZxid), ClientCnxn reconnect",
            steps: vec![
                s(0, create("~/a", "")),
                Step::Connect(1, 30_000),
                s(1, set_watches(false, &["~/a"], &["~/b"], &["~/a"])),
                s(0, set("~/a", "1", -1)),
                s(0, create("~/b", "")),
                s(0, create("~/a/c", "")),
                s(1, set_watches(true, &["~/a", "~/gone"], &["~/b", "~/none"], &["~/a"])),
                s(0, create("~/none", "")),
            ],
        },
        Scenario {
            name: "watch_check_and_remove",
            about: "checkWatches/removeWatches by type: NOWATCHER when absent, a removal event when removed.",
            source: "ZooKeeper 3.5 removeWatches (ZOOKEEPER-442), WatchManager.removeWatcher",
            steps: vec![
                s(0, create("~/a", "")),
                s(1, get("~/a", true)),
                s(1, children("~/a", true)),
                s(1, check_watches("~/a", 2)),
                s(1, check_watches("~/b", 3)),
                s(1, remove_watches("~/a", 2)),
                s(1, remove_watches("~/a", 2)),
                s(1, check_watches("~/a", 1)),
                s(0, set("~/a", "1", -1)),
                s(1, remove_watches("~/a", 3)),
                s(0, create("~/a/c", "")),
            ],
        },
    ]
}
