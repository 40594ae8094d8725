//! The clickhouse-server 18.16 workload (ReplicatedMergeTree, ON CLUSTER, system.zookeeper)
//! and what every ZooKeeper-protocol server must produce for it; shared by
//! tests/tests/clickhouse_server.rs and clickhouse_proxy.rs (included with `#[path]`).

#![allow(dead_code)] // each test binary uses a different subset

use std::path::Path;
use std::time::{Duration, Instant};

use super::common::{children, dump_tree, find, secs, tree_diff, venv_has, Target, WireLog, ZNode};
use super::server18::ClickHouseServer;
use testkeeper_tests::env::external_prereq;

pub const CLICKHOUSE_SERVER: &str = "/usr/sbin/clickhouse-server";
pub const CLICKHOUSE_CLIENT: &str = "/usr/bin/clickhouse-client";
/// Upper bound for one query, however stuck ClickHouse or the server is.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(60);
/// Upper bound for the whole workload (it takes about 3 s when healthy).
pub const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(150);
/// ON CLUSTER waits this long for the DDL queue (ClickHouse's default: 180).
pub const DDL_TIMEOUT_SECS: u32 = 30;
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(20);

pub fn prereqs() -> bool {
    external_prereq(
        "Debian clickhouse-server and clickhouse-client 18.16",
        Path::new(CLICKHOUSE_SERVER).is_file() && Path::new(CLICKHOUSE_CLIENT).is_file(),
    ) && external_prereq("Python venv with kazoo (scripts/install-test-deps.sh)", venv_has(&["kazoo"]))
}

/// What one workload run observed.
pub struct ServerRun {
    pub label: String,
    /// Step name to query result (`Err`: the client's error message).
    pub results: Vec<(&'static str, Result<String, String>)>,
    /// The tree while ClickHouse ran, and after it shut down.
    pub live: Vec<ZNode>,
    pub after: Vec<ZNode>,
    pub tcp_port: u16,
    pub op_errors: std::collections::BTreeSet<(String, String)>,
}

impl ServerRun {
    pub fn result(&self, name: &str) -> &Result<String, String> {
        &self.results.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no step {name}")).1
    }
}

pub const RMT: &str = "/clickhouse/tables/01/rmt";

/// The workload, step by step; `{replica}` and `{shard}` come from macros.
pub const STEPS: &[(&str, &str)] = &[
    (
        "create",
        "CREATE TABLE rmt (d Date, k UInt64, v String) \
        ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/rmt', '{replica}', d, k, 8192)",
    ),
    ("insert1", "INSERT INTO rmt VALUES ('2024-01-01', 1, 'a'), ('2024-01-01', 2, 'b')"),
    ("insert_dup", "INSERT INTO rmt VALUES ('2024-01-01', 1, 'a'), ('2024-01-01', 2, 'b')"),
    ("count_after_dup", "SELECT count() FROM rmt"),
    ("insert2", "INSERT INTO rmt VALUES ('2024-01-02', 3, 'c')"),
    ("parts_before_optimize", "SELECT count() FROM system.parts WHERE table = 'rmt' AND active"),
    ("optimize", "OPTIMIZE TABLE rmt FINAL"),
    ("parts_after_optimize", "SELECT count() FROM system.parts WHERE table = 'rmt' AND active"),
    ("add_column", "ALTER TABLE rmt ADD COLUMN w UInt32 DEFAULT 7"),
    ("select_all", "SELECT k, v, w FROM rmt ORDER BY k"),
    (
        "replica_status",
        "SELECT is_readonly, is_session_expired, total_replicas, active_replicas \
        FROM system.replicas WHERE table = 'rmt'",
    ),
    (
        "create_on_cluster",
        "CREATE TABLE oc ON CLUSTER tk_cluster (d Date, k UInt64) \
        ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/oc', '{replica}', d, k, 8192)",
    ),
    ("insert_oc", "INSERT INTO oc VALUES ('2024-01-01', 5)"),
    ("count_oc", "SELECT count() FROM oc"),
    ("drop_on_cluster", "DROP TABLE oc ON CLUSTER tk_cluster"),
    ("oc_gone", "SELECT count() FROM system.tables WHERE name = 'oc'"),
    (
        "zk_replica",
        "SELECT name FROM system.zookeeper \
        WHERE path = '/clickhouse/tables/01/rmt/replicas/r1' ORDER BY name",
    ),
    (
        "zk_blocks",
        "SELECT name, value FROM system.zookeeper \
        WHERE path = '/clickhouse/tables/01/rmt/blocks' ORDER BY value",
    ),
    (
        "zk_ddl",
        "SELECT name FROM system.zookeeper \
        WHERE path = '/clickhouse/task_queue/ddl' ORDER BY name",
    ),
    (
        "zk_log_pointer",
        "SELECT value FROM system.zookeeper \
        WHERE path = '/clickhouse/tables/01/rmt/replicas/r1' AND name = 'log_pointer'",
    ),
];

pub fn run_workload(label: &str, target: &Target) -> ServerRun {
    let started = Instant::now();
    let wire_dir = tempfile::Builder::new().prefix("testkeeper-ch18-wire-").tempdir().expect("temp dir");
    let wire = WireLog::start(&target.connect_string(), wire_dir.path(), "wire");
    let mut ch = ClickHouseServer::start(wire.port());
    let ready = secs(started);
    let mut results = Vec::new();
    let deadline = Instant::now() + WORKLOAD_TIMEOUT;
    for (name, sql) in STEPS {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            results.push((*name, Err(format!("not run: the workload took over {WORKLOAD_TIMEOUT:?}"))));
            break;
        }
        let result = ch.query(sql, left.min(QUERY_TIMEOUT));
        let failed = result.is_err();
        results.push((*name, result));
        if failed {
            if let Some(status) = ch.exited() {
                // No point in sending the rest to a dead server.
                results.push(("(server)", Err(format!("clickhouse-server {status}"))));
                break;
            }
        }
    }
    let workload = secs(started);
    // The only per-run value in paths: the DDL queue's host:port entries.
    let host_port = format!("127%2E0%2E0%2E1:{}", ch.tcp_port);
    let masks = [(host_port.as_str(), "host:tcp_port")];
    let live = dump_tree(&target.connect_string(), &masks).unwrap_or_else(|e| panic!("[{label}] {e}"));
    let failures: Vec<_> = results.iter().filter_map(|(n, r)| r.as_ref().err().map(|e| format!("{n}: {e}"))).collect();
    let err_log = ch.err_log(15);
    let stop = ch.shutdown();
    let after = dump_tree(&target.connect_string(), &masks).unwrap_or_else(|e| panic!("[{label}] {e}"));
    eprintln!(
        "[{label}] clickhouse-server ready {ready}, workload done {workload}, shutdown {:.1}s, total {}; requests seen:\n{}",
        stop.as_secs_f64(),
        secs(started),
        wire.summary()
    );
    if !failures.is_empty() {
        panic!(
            "[{label}] queries failed:\n  {}\nclickhouse-server err log:\n{err_log}\nserver log tail:\n{}",
            failures.join("\n  "),
            target.log_tail(20)
        );
    }
    ServerRun { label: label.to_string(), results, live, after, tcp_port: ch.tcp_port, op_errors: wire.op_errors() }
}

/// What every server must produce, real ZooKeeper included.
pub fn assert_workload(run: &ServerRun) {
    let label = &run.label;
    let expect = |name: &str, want: &str| {
        assert_eq!(run.result(name).as_deref(), Ok(want), "[{label}] step {name}");
    };
    // The repeated INSERT is deduplicated: same block hash, no new rows.
    expect("count_after_dup", "2");
    expect("parts_before_optimize", "2");
    expect("parts_after_optimize", "1");
    expect("select_all", "1\ta\t7\n2\tb\t7\n3\tc\t7");
    expect("replica_status", "0\t0\t1\t1");
    // ON CLUSTER answers one status row per host: host, port, status 0.
    let on_cluster = format!("127.0.0.1\t{}\t0\t\t0\t0", run.tcp_port);
    expect("create_on_cluster", &on_cluster);
    expect("drop_on_cluster", &on_cluster);
    expect("count_oc", "1");
    expect("oc_gone", "0");
    expect(
        "zk_replica",
        "columns\nflags\nhost\nis_active\nis_lost\nlog_pointer\nmax_processed_insert_time\n\
         metadata\nmin_unprocessed_insert_time\nmutation_pointer\nparts\nqueue",
    );
    expect("zk_ddl", "query-0000000000\nquery-0000000001");
    // Three log entries: two inserted parts and the merge.
    expect("zk_log_pointer", "3");

    // The same facts from the server's own tree.
    let tree = &run.live;
    let blocks = children(tree, &format!("{RMT}/blocks"));
    assert_eq!(blocks.len(), 2, "[{label}] dedup block hashes: {blocks:?}");
    let ch_blocks = run.result("zk_blocks").as_deref().unwrap_or_default();
    for b in &blocks {
        assert!(ch_blocks.contains(b), "[{label}] system.zookeeper blocks {ch_blocks:?} lack {b}");
    }
    let columns = find(tree, &format!("{RMT}/columns")).expect("columns znode");
    assert!(columns.data.contains("`w` UInt32"), "[{label}] {:?}", columns.data);
    let active = find(tree, &format!("{RMT}/replicas/r1/is_active")).expect("is_active");
    assert!(active.ephemeral, "[{label}] is_active must be ephemeral");
    assert!(
        children(tree, &format!("{RMT}/log")).len() == 3,
        "[{label}] replication log: {:?}",
        children(tree, &format!("{RMT}/log"))
    );
    assert!(
        find(tree, "/clickhouse/tables/01/oc")
            .is_none_or(|_| children(tree, "/clickhouse/tables/01/oc/replicas").is_empty()),
        "[{label}] DROP ... ON CLUSTER left the replica of oc behind"
    );
    for q in ["query-0000000000", "query-0000000001"] {
        let finished = children(tree, &format!("/clickhouse/task_queue/ddl/{q}/finished"));
        assert_eq!(
            finished,
            vec![format!("127%2E0%2E0%2E1:{}", run.tcp_port).as_str()],
            "[{label}] DDL {q} finished by"
        );
    }
    // A clean shutdown deletes is_active and the leader election node
    // (18.16 never sends closeSession; its ephemerals go by delete).
    let ephemerals: Vec<_> = run.after.iter().filter(|n| n.ephemeral).map(|n| &n.path).collect();
    assert!(ephemerals.is_empty(), "[{label}] ephemerals after shutdown: {ephemerals:?}");
}

pub fn assert_matches_zookeeper(run: &ServerRun, zk: &ServerRun) {
    for (when, ours, theirs) in [("while running", &run.live, &zk.live), ("after shutdown", &run.after, &zk.after)] {
        let diff = tree_diff(ours, theirs);
        assert!(
            diff.is_empty(),
            "[{}] znodes {when} differ from Apache ZooKeeper's:\n  {}",
            run.label,
            diff.join("\n  ")
        );
    }
}
