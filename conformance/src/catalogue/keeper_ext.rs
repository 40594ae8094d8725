//! ClickHouse Keeper's extension ops (opcodes 500+). Every scenario here is Keeper-only: it
//! runs when the target and the reference (if any) are both Keeper-flavored.

use crate::ops::Op;
use crate::scenario::flags::*;
use crate::scenario::*;

const EXT: &str = "ClickHouse ZooKeeperCommon.cpp / KeeperStorage.cpp; docs/research/keeper-ext-wire.md";

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "keeper_create_if_not_exists",
            about: "createIfNotExists creates once, then answers OK without a change.",
            source: EXT,
            steps: vec![
                s(0, create_as(OpCode::CreateIfNotExists, "~/a", PERSISTENT, 0)),
                s(0, create_as(OpCode::CreateIfNotExists, "~/a", PERSISTENT, 0)),
                s(0, exists("~/a", false)),
            ],
        },
        Scenario {
            name: "keeper_check_not_exists_and_try_remove",
            about: "checkNotExists in a multi guards a create; tryRemove of a missing node is OK.",
            source: EXT,
            steps: vec![
                s(0, multi(vec![Op::CheckNotExists { path: "~/n".into() }, create("~/n", "")])),
                s(0, multi(vec![Op::CheckNotExists { path: "~/n".into() }, create("~/m", "")])),
                s(0, Op::TryRemove { path: "~/n".into(), version: -1 }),
                s(0, Op::TryRemove { path: "~/n".into(), version: -1 }),
                s(0, exists("~/n", false)),
            ],
        },
        Scenario {
            name: "keeper_remove_recursive_and_filtered_list",
            about: "filteredList by node kind; removeRecursive within and over its limit.",
            source: EXT,
            steps: vec![
                s(0, create("~/d", "")),
                s(0, create("~/d/p", "")),
                s(0, create_f("~/d/e", "", EPHEMERAL)),
                s(0, Op::FilteredList { path: "~/d".into(), list_type: 0 }),
                s(0, Op::FilteredList { path: "~/d".into(), list_type: 1 }),
                s(0, Op::FilteredList { path: "~/d".into(), list_type: 2 }),
                s(0, Op::RemoveRecursive { path: "~/d".into(), limit: 1 }),
                s(0, Op::RemoveRecursive { path: "~/d".into(), limit: 10 }),
                s(0, exists("~/d", false)),
            ],
        },
    ]
}
