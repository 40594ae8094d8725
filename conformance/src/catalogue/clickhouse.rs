//! The ZooKeeper patterns ClickHouse depends on, as the seeds describe them, and the races.

use crate::scenario::flags::*;
use crate::scenario::*;

const DDL: &str = "seeds/000 (DDLWorker.cpp, DistributedQueryStatusSource.cpp)";
const BACKUP: &str = "seeds/001 (BackupCoordinationStageSync.cpp, BackupCoordinationOnCluster.cpp)";
const RMT: &str = "seeds/001 (EphemeralLockInZooKeeper.cpp, ReplicatedMergeTreeQueue.cpp)";

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "ch_ddl_queue",
            about: "query-NNNNNNNNNN entries, active/<host> claim, finished/<host> in the multi that removes active.",
            source: DDL,
            steps: vec![
                s(0, create("~/ddl", "")),
                s(1, children("~/ddl", true)),
                s(0, multi(vec![create_f("~/ddl/query-", "CREATE TABLE t", SEQUENTIAL)])),
                s(0, create("~/ddl/query-0000000000/active", "")),
                s(0, create("~/ddl/query-0000000000/finished", "")),
                s(1, children("~/ddl", false)),
                s(1, create_f("~/ddl/query-0000000000/active/h1", "canary", EPHEMERAL)),
                s(1, create_f("~/ddl/query-0000000000/active/h1", "canary", EPHEMERAL)),
                s(0, children("~/ddl/query-0000000000/finished", true)),
                s(
                    1,
                    multi(vec![
                        delete("~/ddl/query-0000000000/active/h1", -1),
                        create("~/ddl/query-0000000000/finished/h1", "0\n"),
                    ]),
                ),
                s(0, children("~/ddl/query-0000000000/active", false)),
                s(0, children("~/ddl/query-0000000000/finished", false)),
                s(0, get("~/ddl/query-0000000000/finished/h1", false)),
            ],
        },
        Scenario {
            name: "ch_backup_coordination",
            about: "Stage nodes, alive|<host> ephemerals, the versioned claim multi, writing_files election.",
            source: BACKUP,
            steps: vec![
                s(0, create("~/backup", "")),
                s(0, create("~/backup/num_hosts", "0")),
                s(0, create("~/backup/alive_tracker", "")),
                s(
                    0,
                    multi(vec![
                        create("~/backup/stage", ""),
                        set("~/backup/num_hosts", "1", 0),
                        set("~/backup/alive_tracker", "", 0),
                        create("~/backup/started|h0", "1"),
                        create_f("~/backup/alive|h0", "", EPHEMERAL),
                    ]),
                ),
                s(
                    1,
                    multi(vec![
                        set("~/backup/num_hosts", "1", 0),
                        set("~/backup/alive_tracker", "", 0),
                        create("~/backup/started|h1", "1"),
                        create_f("~/backup/alive|h1", "", EPHEMERAL),
                    ]),
                ),
                s(
                    1,
                    multi(vec![
                        set("~/backup/num_hosts", "2", 1),
                        set("~/backup/alive_tracker", "", 1),
                        create("~/backup/started|h1", "1"),
                        create_f("~/backup/alive|h1", "", EPHEMERAL),
                    ]),
                ),
                s(0, create("~/backup/writing_files", "")),
                s(0, create("~/backup/writing_files/17", "0")),
                s(1, create("~/backup/writing_files/17", "1")),
                s(1, get("~/backup/writing_files/17", false)),
                s(0, create("~/backup/writing_files/17", "0")),
                s(0, get("~/backup/writing_files/17", false)),
                s(0, children("~/backup", false)),
                Step::Close(1),
                s(0, children("~/backup", false)),
            ],
        },
        Scenario {
            name: "ch_rmt_insert_dedup",
            about: "Insert multi: create+delete on each dedup path, then the ephemeral-sequential block- lock.",
            source: RMT,
            steps: vec![
                s(0, create("~/blocks", "")),
                s(0, create("~/block_numbers", "")),
                s(0, create("~/block_numbers/all", "")),
                s(
                    0,
                    multi(vec![
                        create("~/blocks/all_h1", ""),
                        delete("~/blocks/all_h1", -1),
                        create_f("~/block_numbers/all/block-", "temp", EPHEMERAL_SEQUENTIAL),
                    ]),
                ),
                s(0, create("~/blocks/all_h1", "part")),
                s(
                    1,
                    multi(vec![
                        create("~/blocks/all_h2", ""),
                        delete("~/blocks/all_h2", -1),
                        create("~/blocks/all_h1", ""),
                        delete("~/blocks/all_h1", -1),
                        create_f("~/block_numbers/all/block-", "temp", EPHEMERAL_SEQUENTIAL),
                    ]),
                ),
                s(0, children2("~/block_numbers/all", false)),
            ],
        },
        Scenario {
            name: "ch_log_to_queue",
            about: "Copying log entries into queue-NNNNNNNNNN with log_pointer advanced in the same multi.",
            source: RMT,
            steps: vec![
                s(0, create("~/log", "")),
                s(0, create_f("~/log/log-", "entry0", SEQUENTIAL)),
                s(0, create_f("~/log/log-", "entry1", SEQUENTIAL)),
                s(0, create("~/replica", "")),
                s(0, create("~/replica/queue", "")),
                s(0, create("~/replica/log_pointer", "0")),
                s(1, children("~/replica/queue", true)),
                s(
                    1,
                    multi(vec![
                        create_f("~/replica/queue/queue-", "entry0", SEQUENTIAL),
                        create_f("~/replica/queue/queue-", "entry1", SEQUENTIAL),
                        set("~/replica/log_pointer", "2", -1),
                    ]),
                ),
                s(1, get("~/replica/log_pointer", false)),
                s(1, children2("~/replica/queue", false)),
            ],
        },
        Scenario {
            name: "ch_keepermap_rows",
            about: "KeeperMap row CAS: versioned set, a stale version fails, then the version+1 read.",
            source: "ClickHouse StorageKeeperMap.cpp (versioned multi of set/create/remove)",
            steps: vec![
                s(0, create("~/data", "")),
                s(0, multi(vec![create("~/data/k1", "v1"), create("~/data/k2", "v2")])),
                s(0, get("~/data/k1", false)),
                s(0, multi(vec![set("~/data/k1", "v1b", 0), delete("~/data/k2", 0)])),
                s(1, multi(vec![set("~/data/k1", "v1c", 0)])),
                s(1, get("~/data/k1", false)),
                s(0, children2("~/data", false)),
            ],
        },
        Scenario {
            name: "race_lock",
            about: "Five sessions take one ephemeral lock at once: exactly one winner.",
            source: "ZooKeeper recipes (lock); ClickHouse leader election",
            steps: vec![Step::Race(Race::Lock { sessions: 5, path: "~/lock".into() })],
        },
        Scenario {
            name: "race_sequential",
            about: "Four sessions create sequential nodes at once: names distinct and increasing.",
            source: "ZooKeeper PrepRequestProcessor sequential suffix; seeds/000 DDL queue",
            steps: vec![Step::Race(Race::Sequential { sessions: 4, per_session: 5, prefix: "~/q-".into() })],
        },
    ]
}
