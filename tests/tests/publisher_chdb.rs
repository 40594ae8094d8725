//! The publisher's KeeperMap row against ClickHouse itself (chdb 26.x from the test venv) on
//! one `testkeeper serve` (keeper flavor):
//!
//! - chdb CREATEs the authority table with the documented schema and INSERTs a row for one
//!   target; the publisher's reader (`keepermap` + `Authority::from_text`) must decode it
//!   exactly, at the node name `keepermap::key_node_name` computes;
//! - the publisher publishes another target end to end (simulated hosts); a plain chdb
//!   `SELECT` in a fresh process must see exactly that row's bytes.
//!
//! Both keys were picked so their base64 has a character where the standard and URL-safe
//! alphabets differ (`db.t?` -> `BWRiLnQ/` or `BWRiLnQ_`, `db.a>?` -> `BmRiLmE+Pw==` or
//! `BmRiLmE-Pw==`): a wrong alphabet shows up as a missing node or a row chdb cannot see.
//!
//! chdb missing skips with the reason, or fails under TESTKEEPER_REQUIRE_EXTERNAL=1.

#[path = "../clickhouse/common.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use testkeeper_publisher::authority::{Authority, Generation, Phase, TableIdentity};
use testkeeper_publisher::hosts::{Behavior, Hosts};
use testkeeper_publisher::keepermap::{decode_row_value, key_node_name, TableLayout};
use testkeeper_publisher::{run, Config, Link, Outcome};
use testkeeper_tests::env::{external_prereq, venv_python};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::TestkeeperProcess;

/// chdb's start plus its ~5 s shutdown, a handful of statements; longer means stuck.
const CHDB_TIMEOUT: Duration = Duration::from_secs(120);
/// The KeeperMap path (under chdb.xml's `/keeper_map_tables`) and table name.
const TABLE: &str = "publisher_authority";
const CHDB_TARGET: &str = "db.t?";
const PUBLISHER_TARGET: &str = "db.a>?";

/// Runs statements in one chdb process: argv = config, then (name, sql) pairs as JSON on
/// stdin; prints {name: rows as JSONEachRow lines, or {"error": ...}}. Every statement runs,
/// so a failure is reported with the others' results.
const CHDB_SCRIPT: &str = r#"
import json, sys
import chdb
steps = json.loads(sys.stdin.read())
conn = chdb.connect(":memory:?config-file=" + sys.argv[1])
out = {}
for name, sql in steps:
    try:
        res = str(conn.query(sql, "JSONEachRow")).strip()
        out[name] = [json.loads(line) for line in res.splitlines() if line.strip()]
    except Exception as e:
        out[name] = {"error": str(e)}
conn.close()
print(json.dumps(out))
"#;

fn create_sql() -> String {
    format!(
        "CREATE TABLE {TABLE} (target String, authority String) \
         ENGINE = KeeperMap('/{TABLE}') PRIMARY KEY target"
    )
}

/// A SQL string literal (ClickHouse escapes: backslash and single quote).
fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Runs `steps` in a fresh chdb process in `dir`; panics with its stderr on failure/timeout.
fn chdb(dir: &Path, config: &Path, steps: &[(&str, String)]) -> Value {
    let mut cmd = Command::new(venv_python());
    cmd.arg("-c").arg(CHDB_SCRIPT).arg(config).current_dir(dir);
    let input = serde_json::to_vec(steps).unwrap();
    let out = run_bounded(&mut cmd, &input, CHDB_TIMEOUT).expect("running chdb");
    let what = if out.timed_out() { "timed out" } else { "failed" };
    assert!(out.success(), "chdb {what} after {:?}:\n{}", out.elapsed, out.combined());
    let report: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("chdb printed no JSON ({e}):\n{}", out.combined()));
    for (name, _) in steps {
        assert!(report[name].get("error").is_none(), "chdb step {name} failed: {}", report[name]);
    }
    report
}

/// A well-formed authority for `target`, as a writer other than the publisher would store it.
fn foreign_authority(target: &str) -> Authority {
    Authority {
        format: 1,
        target: target.into(),
        phase: Phase::Idle,
        epoch: 3,
        operation_id: Some("op-\"quoted\"-'single'-\\".into()),
        inventory_digest: None,
        generation: Generation { table: "db.t__g3".into(), digest: "ab".repeat(32) },
        predecessor: None,
        table: TableIdentity {
            uuid: "00000000-0000-4000-8000-000000000003".into(),
            engine: "ReplicatedMergeTree".into(),
            schema: "x UInt64".into(),
            keeper_paths: vec!["/clickhouse/tables/01/db/t".into()],
        },
        ddl_token: None,
    }
}

#[test]
fn clickhouse_and_the_publisher_read_each_others_rows() {
    if !external_prereq("Python venv with chdb (scripts/install-test-deps.sh)", common::venv_has(&["chdb"])) {
        return;
    }
    common::assert_testkeeper_built();
    let server = TestkeeperProcess::start(&["--flavor", "keeper"]);
    let dir = tempfile::Builder::new().prefix("testkeeper-pubchdb-").tempdir().unwrap();
    // chdb reads a config.xml from its working directory: the config gets another name.
    let config = dir.path().join("chdb-config.xml");
    let template = std::fs::read_to_string(common::script("chdb.xml")).expect("chdb.xml");
    std::fs::write(&config, template.replace("@ZK_PORT@", &server.addr().port().to_string())).unwrap();

    let theirs = foreign_authority(CHDB_TARGET).to_text();
    let insert = format!("INSERT INTO {TABLE} VALUES ({}, {})", sql_str(CHDB_TARGET), sql_str(&theirs));
    chdb(dir.path(), &config, &[("create", create_sql()), ("insert", insert)]);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut cfg = Config::new(PUBLISHER_TARGET, 2, 11);
    cfg.table = TABLE.into();
    let layout = TableLayout::new(&cfg.keeper_map_prefix, &cfg.table);
    let ours = rt.block_on(async {
        let mut link = Link::connect(server.addr()).await.expect("publisher connects");
        // (b) The row chdb inserted, at the name we compute, decodes exactly.
        let names = link.children(&layout.data_dir()).await.unwrap().unwrap_or_default();
        assert_eq!(names, vec![key_node_name(CHDB_TARGET)], "ClickHouse's row node name (base64 alphabet)");
        let (data, _) = link.get(&layout.row_path(CHDB_TARGET)).await.unwrap().expect("chdb's row");
        let text = decode_row_value(&data).expect("row value is one binary String");
        assert_eq!(text, theirs);
        assert_eq!(Authority::from_text(&text), Some(foreign_authority(CHDB_TARGET)));

        // (a) A whole publication of another target into the table chdb created.
        let hosts = Hosts::start(server.addr(), &cfg.ddl_queue, &cfg.sim_root, vec![Behavior::Succeed; cfg.hosts])
            .await
            .expect("simulated hosts");
        let report = run::publish(&mut link, &cfg).await;
        hosts.stop();
        assert_eq!(report.outcome, Some(Outcome::Completed), "{}", report.reason);
        assert_eq!(report.row_path, layout.row_path(PUBLISHER_TARGET));
        let (data, _) = link.get(&report.row_path).await.unwrap().expect("publisher's row");
        decode_row_value(&data).expect("publisher's row value")
    });
    assert_eq!(Authority::from_text(&ours).map(|a| a.phase), Some(Phase::Idle));

    let select = format!("SELECT target, authority FROM {TABLE} ORDER BY target");
    let point = format!("SELECT authority FROM {TABLE} WHERE target = {}", sql_str(PUBLISHER_TARGET));
    let report = chdb(dir.path(), &config, &[("attach", create_sql()), ("all", select), ("point", point)]);
    let row = |t: &str, a: &str| serde_json::json!({"target": t, "authority": a});
    assert_eq!(report["all"], serde_json::json!([row(PUBLISHER_TARGET, &ours), row(CHDB_TARGET, &theirs)]));
    assert_eq!(report["point"], serde_json::json!([{"authority": ours}]));
}
