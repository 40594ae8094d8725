//! The chdb (ClickHouse 26.x in process) workload, KeeperMap, keeper-stored UDFs and named
//! collections, and what every ZooKeeper-protocol server must produce for it; shared by
//! tests/tests/clickhouse_chdb.rs and clickhouse_proxy.rs (included with `#[path]`).

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::common::{self, children, find, secs, tree_diff, tree_from_json, venv_has, Target, WireLog, ZNode};
use serde_json::Value;
use testkeeper_tests::env::{external_prereq, venv_python};
use testkeeper_tests::process::run_bounded;

/// One phase is a few hundred Keeper requests plus chdb's ~5 s shutdown with
/// keeper-backed UDFs; a phase that takes longer than this is stuck.
pub const PHASE_TIMEOUT: Duration = Duration::from_secs(120);

/// Opcodes only ClickHouse Keeper serves (filteredList and later).
pub const KEEPER_ONLY: std::ops::RangeInclusive<i64> = 500..=599;
pub const MULTI_READ: i64 = 22;

pub fn prereqs() -> bool {
    external_prereq("Python venv with kazoo and chdb (scripts/install-test-deps.sh)", venv_has(&["kazoo", "chdb"]))
}

/// Both phases against one server, and what the proxy saw.
pub struct ChdbRun {
    pub label: String,
    pub write: Value,
    pub verify: Value,
    pub wire_summary: String,
    pub opcodes: BTreeSet<i64>,
    pub op_errors: BTreeSet<(String, String)>,
    pub unanswered: Vec<String>,
    /// `mntr` node count and the number of znodes dumped, after "verify".
    pub znode_counts: (Option<usize>, usize),
}

impl ChdbRun {
    pub fn step<'a>(&'a self, phase: &str, name: &str) -> &'a Value {
        let report = if phase == "write" { &self.write } else { &self.verify };
        &report["steps"][name]
    }

    pub fn tree(&self, phase: &str) -> Vec<ZNode> {
        let report = if phase == "write" { &self.write } else { &self.verify };
        tree_from_json(&report["tree"])
    }
}

pub fn run_chdb(label: &str, target: &Target) -> ChdbRun {
    let started = Instant::now();
    // chdb reads a config.xml from its working directory, so it runs in an
    // empty directory of its own; the config has another name.
    let dir = tempfile::Builder::new().prefix("testkeeper-chdb-").tempdir().expect("temp dir");
    let wire = WireLog::start(&target.connect_string(), dir.path(), "wire");
    let config = dir.path().join("chdb-config.xml");
    let template = std::fs::read_to_string(common::script("chdb.xml")).expect("chdb.xml");
    std::fs::write(&config, template.replace("@ZK_PORT@", &wire.port().to_string())).expect("writing chdb config");

    let phase = |phase| run_phase(label, phase, &config, target, dir.path(), &wire);
    let write = phase("write");
    let verify = phase("verify");
    let dumped = tree_from_json(&verify["tree"]).len();
    let unanswered = wire.ops().iter().filter(|w| w.err.is_none() && w.op != -11).map(|w| format!("{:?}", w)).collect();
    let run = ChdbRun {
        label: label.to_string(),
        wire_summary: wire.summary(),
        opcodes: wire.opcodes(),
        op_errors: wire.op_errors(),
        unanswered,
        znode_counts: (target.znode_count(), dumped),
        write,
        verify,
    };
    eprintln!("[{label}] total {}; requests seen:\n{}", secs(started), run.wire_summary);
    run
}

/// Runs one phase of `chdb_workload.py` in `dir` and returns its report.
pub fn run_phase(label: &str, phase: &str, config: &Path, target: &Target, dir: &Path, wire: &WireLog) -> Value {
    let mut cmd = Command::new(venv_python());
    cmd.arg(common::script("chdb_workload.py"))
        .arg(phase)
        .arg(config)
        // The tree is dumped from the server directly, not through the
        // proxy, so it does not show up in the wire log.
        .arg(target.connect_string())
        .current_dir(dir);
    let out = run_bounded(&mut cmd, b"", PHASE_TIMEOUT).expect("running chdb_workload.py");
    if !out.success() {
        let what = if out.timed_out() { "timed out" } else { "failed" };
        panic!(
            "[{label}] chdb phase {phase} {what} after {:?}:\n{}\n\
             server log tail:\n{}\nrequests seen:\n{}",
            out.elapsed,
            tail(&out.stderr, 40),
            target.log_tail(20),
            wire.summary()
        );
    }
    let report: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("[{label}] chdb phase {phase} printed no JSON ({e}):\n{}", out.stdout));
    eprintln!(
        "[{label}] chdb {phase}: {:.1}s (ClickHouse {}, shutdown {}s)",
        out.elapsed.as_secs_f64(),
        report["clickhouse_version"].as_str().unwrap_or("?"),
        report["close_secs"]
    );
    report
}

pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What every server must produce, real ZooKeeper included (which keeps
/// these expectations honest).
pub fn assert_workload(run: &ChdbRun) {
    let label = &run.label;
    let expect = |phase: &str, name: &str, want: &str| {
        let step = run.step(phase, name);
        assert!(
            step["ok"] == true && step["result"] == want,
            "[{label}] {phase}/{name}: expected {want:?}, got {step}"
        );
    };
    let ok = |phase: &str, name: &str| {
        let step = run.step(phase, name);
        assert!(step["ok"] == true, "[{label}] {phase}/{name} failed: {step}");
    };

    for name in ["km_create", "km_insert", "km_upsert", "km_update", "km_delete"] {
        ok("write", name);
    }
    expect("write", "km_select", "1,\"a\"\n2,\"b\"\n3,\"c\"");
    expect("write", "km_point", "\"b\"");
    expect("write", "km_points", "1,\"a\"\n3,\"c\"");
    // Strict mode turns the existing key into a failed multi: NODEEXISTS.
    let dup = run.step("write", "km_strict_dup");
    assert!(
        dup["ok"] == false && dup["error"].as_str().unwrap_or("").contains("Node exists"),
        "[{label}] strict-mode INSERT of an existing key must fail with NODEEXISTS: {dup}"
    );
    expect("write", "km_after_alter", "1,\"A\"\n2,\"z\"");
    ok("write", "km_truncate");
    expect("write", "km_after_truncate", "0");
    ok("write", "km_insert_again");
    expect("write", "km_after_insert_again", "7,\"g\"");
    ok("write", "km_drop");
    ok("write", "keep_create");
    ok("write", "keep_insert");
    expect("write", "keep_count", "100,4950");
    ok("write", "udf_create");
    expect("write", "udf_call", "42");
    ok("write", "nc_create");
    expect("write", "nc_list", "\"tk_nc\"");

    // A second process, new sessions: everything comes back from the server.
    ok("verify", "keep_attach");
    expect("verify", "keep_count", "100,4950");
    expect("verify", "keep_point", "\"81\"");
    expect("verify", "udf_call", "2");
    expect("verify", "udf_list", "\"tk_plus_one\"");
    expect("verify", "nc_list", "\"tk_nc\"");
    for name in ["keep_drop", "udf_drop", "nc_drop"] {
        ok("verify", name);
    }
    expect("verify", "udf_gone", "0");
    expect("verify", "nc_gone", "0");

    // The same facts, read from the server's tree.
    let tree = run.tree("write");
    let data = children(&tree, "/keeper_map_tables/km_keep/data");
    assert_eq!(data.len(), 100, "[{label}] km_keep rows as znodes");
    // Keys are base64 of the binary key: UInt64 1 is AQAAAAAAAAA=.
    assert!(data.contains(&"AQAAAAAAAAA="), "[{label}] {data:?}");
    assert!(
        find(&tree, "/keeper_map_tables/km").is_none(),
        "[{label}] DROP TABLE km left /keeper_map_tables/km behind"
    );
    let has_data = |path: &str, text: &str| {
        let node = find(&tree, path).unwrap_or_else(|| panic!("[{label}] no znode {path}"));
        assert!(node.data.contains(text), "[{label}] {path}: {:?}", node.data);
    };
    has_data("/clickhouse/user_defined/function_tk_plus_one.sql", "CREATE FUNCTION tk_plus_one");
    has_data("/clickhouse/named_collections/tk_nc.sql", "CREATE NAMED COLLECTION tk_nc");
    assert_eq!(
        children(&tree, "/clickhouse/sessions/zookeeper").len(),
        1,
        "[{label}] ClickHouse's session marker node"
    );
    let tree = run.tree("verify");
    assert!(
        children(&tree, "/clickhouse/user_defined").is_empty()
            && children(&tree, "/clickhouse/named_collections").is_empty(),
        "[{label}] DROP FUNCTION / DROP NAMED COLLECTION left znodes behind"
    );
    assert!(run.unanswered.is_empty(), "[{label}] requests without a reply: {:?}", run.unanswered);
}

pub fn assert_matches_zookeeper(run: &ChdbRun, zk: &ChdbRun) {
    for phase in ["write", "verify"] {
        let diff = tree_diff(&run.tree(phase), &zk.tree(phase));
        assert!(
            diff.is_empty(),
            "[{}] znodes after chdb {phase} differ from Apache ZooKeeper's:\n  {}",
            run.label,
            diff.join("\n  ")
        );
    }
}

/// Checks that hold for one testkeeper configuration beyond the workload.
pub type VariantCheck = fn(&ChdbRun, Option<&ChdbRun>);

/// The testkeeper configurations ClickHouse runs against.
pub const VARIANTS: &[(&str, &[&str], VariantCheck)] = &[
    ("keeper-default-flags", &["--flavor", "keeper"], check_default_flags),
    ("keeper-all-flags", &["--flavor", "keeper", "--feature-flags", "all"], check_all_flags),
    ("zookeeper-flavor", &["--flavor", "zookeeper"], check_zookeeper_flavor),
];

/// Keeper's default flags (filtered_list, multi_read): ClickHouse batches
/// reads into multiRead but sends none of the opt-in Keeper-only ops.
pub fn check_default_flags(run: &ChdbRun, _zk: Option<&ChdbRun>) {
    assert!(
        run.opcodes.contains(&MULTI_READ),
        "[{}] expected multiRead with the default flags: {:?}",
        run.label,
        run.opcodes
    );
    let keeper_only: Vec<_> = run.opcodes.iter().filter(|o| KEEPER_ONLY.contains(o)).collect();
    assert!(
        keeper_only.iter().all(|o| **o == 500),
        "[{}] only filteredList of the Keeper-only ops is advertised by default, saw {keeper_only:?}",
        run.label
    );
}

/// Every flag advertised: ClickHouse must use (and get served) Keeper-only
/// operations beyond the defaults.
pub fn check_all_flags(run: &ChdbRun, _zk: Option<&ChdbRun>) {
    let extra: Vec<_> = run.opcodes.iter().filter(|o| KEEPER_ONLY.contains(o) && **o != 500).collect();
    assert!(
        !extra.is_empty(),
        "[{}] with --feature-flags all ClickHouse used no opt-in Keeper-only op: {:?}",
        run.label,
        run.opcodes
    );
}

/// The zookeeper flavor must look exactly like ZooKeeper to ClickHouse: no
/// Keeper-only ops, and the same (op, error) pairs as ZooKeeper's run.
pub fn check_zookeeper_flavor(run: &ChdbRun, zk: Option<&ChdbRun>) {
    check_plain_zookeeper_ops(run);
    if let Some(zk) = zk {
        let only_tk: Vec<_> = run.op_errors.difference(&zk.op_errors).collect();
        let only_zk: Vec<_> = zk.op_errors.difference(&run.op_errors).collect();
        assert!(
            only_tk.is_empty() && only_zk.is_empty(),
            "[{}] (op, error) pairs differ from ZooKeeper's: only testkeeper {only_tk:?}, \
             only ZooKeeper {only_zk:?}",
            run.label
        );
    }
}

/// ClickHouse finds neither /keeper/feature_flags nor /keeper/api_version
/// and sticks to plain ZooKeeper requests.
pub fn check_plain_zookeeper_ops(run: &ChdbRun) {
    assert!(
        !run.opcodes.contains(&MULTI_READ) && !run.opcodes.iter().any(|o| KEEPER_ONLY.contains(o)),
        "[{}] ClickHouse sent Keeper-only ops: {:?}",
        run.label,
        run.opcodes
    );
}
