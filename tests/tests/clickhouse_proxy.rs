//! Real ClickHouse through `testkeeper proxy` in front of Apache ZooKeeper 3.8, the proxy's
//! oracle an embedded zookeeper-flavor testkeeper:
//! * clickhouse-server 18.16 and chdb (ClickHouse 26.x) run their workloads through it
//!   unchanged (the same assertions as against ZooKeeper directly) and nothing diverges;
//! * with a deliberately broken oracle (a testkeeper that answers one getData under
//!   /clickhouse with NONODE), the first divergence flagged is that request, named;
//! * the 18.16 session the proxy recorded replays against a fresh testkeeper (zookeeper
//!   flavor) and a fresh ZooKeeper 3.8 with no difference.
//!
//! Prerequisites as tests/tests/clickhouse_server.rs and clickhouse_chdb.rs, plus Debian's
//! ZooKeeper (the upstream); missing ones skip, or fail under TESTKEEPER_REQUIRE_EXTERNAL=1.

#[path = "../clickhouse/chdb_run.rs"]
mod chdb_run;
#[path = "../clickhouse/common.rs"]
mod common;
#[path = "../clickhouse/server18.rs"]
mod server18;
#[path = "../clickhouse/server18_workload.rs"]
mod server18_workload;

use common::Target;
use testkeeper_tests::env::{external_prereq, zookeeper_installed};
use testkeeper_tests::proxy::replay;
use testkeeper_tests::{TestkeeperProcess, ZooKeeperProcess};

/// The broken oracle: answers the first getData under /clickhouse with NONODE.
const BROKEN: &[&str] = &["--flavor", "zookeeper", "--fault", "error:code=-101,op=getData,path=/clickhouse/**,count=1"];

fn with_zookeeper() -> bool {
    external_prereq("Debian ZooKeeper (zookeeper package + java), the proxy's upstream", zookeeper_installed())
}

#[test]
fn clickhouse_server_18_through_the_proxy_good_and_broken_oracle_and_replay() {
    if !server18_workload::prereqs() || !with_zookeeper() {
        return;
    }
    common::assert_testkeeper_built();
    let (good, broken) = std::thread::scope(|s| {
        let run = |label: &'static str, oracle: Option<&'static [&'static str]>| {
            s.spawn(move || {
                let target = Target::proxied_zookeeper(oracle);
                let run = server18_workload::run_workload(label, &target);
                (run, target.stop_proxy().expect("a proxied target"))
            })
        };
        let good = run("zookeeper-3.8-via-proxy", None);
        let broken = run("zookeeper-3.8-via-proxy-broken-oracle", Some(BROKEN));
        (good.join().map_err(common::panic_message), broken.join().map_err(common::panic_message))
    });
    let (good_run, good) = good.unwrap_or_else(|e| panic!("{e}"));
    server18_workload::assert_workload(&good_run);
    assert!(
        good.divergences.is_empty() && good.clean_exit,
        "the embedded oracle diverged from ZooKeeper under clickhouse-server 18.16:\n{:#?}\n{}",
        good.divergences,
        good.log
    );
    assert!(good.log.contains("proxy: ") && good.log.contains(", 0 divergence(s)"), "{}", good.log);

    let (broken_run, bad) = broken.unwrap_or_else(|e| panic!("{e}"));
    // ClickHouse got ZooKeeper's answers: the workload is unchanged.
    server18_workload::assert_workload(&broken_run);
    let first = bad.divergences.first().unwrap_or_else(|| panic!("the broken oracle went unnoticed:\n{}", bad.log));
    eprintln!("[broken oracle] first divergence flagged: {first}");
    let op = first["op"].as_str().unwrap_or_default();
    assert!(op.starts_with("get /clickhouse/"), "the first divergence is not the broken getData: {first}");
    assert!(first["keys"].as_array().unwrap().iter().any(|k| k["key"] == "result.err" && k["reference"] == "NONODE"));
    assert!(!bad.clean_exit && bad.log.contains(&format!("`{op}`")), "{}", bad.log);

    // The recorded session against fresh servers of both kinds.
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let zk = ZooKeeperProcess::start();
    for (label, target) in [("testkeeper", tk.connect_string()), ("ZooKeeper 3.8", zk.connect_string())] {
        let (ok, text) = replay(&good.recording, &target);
        eprintln!("[replay against {label}]\n{text}");
        assert!(ok && text.contains(", 0 difference(s)"), "replay against {label}:\n{text}");
        let requests: usize =
            text.lines().find_map(|l| l.split(" request(s)").next()?.rsplit(' ').next()?.parse().ok()).unwrap_or(0);
        assert!(requests > 100, "the recording holds ClickHouse's session ({requests} requests):\n{text}");
    }
}

#[test]
fn chdb_through_the_proxy_passes_with_no_divergence() {
    if !chdb_run::prereqs() || !with_zookeeper() {
        return;
    }
    common::assert_testkeeper_built();
    let target = Target::proxied_zookeeper(None);
    let run = chdb_run::run_chdb("zookeeper-3.8-via-proxy", &target);
    let result = target.stop_proxy().expect("a proxied target");
    chdb_run::assert_workload(&run);
    chdb_run::check_plain_zookeeper_ops(&run);
    assert!(
        result.divergences.is_empty() && result.clean_exit,
        "the embedded oracle diverged from ZooKeeper under chdb:\n{:#?}\n{}",
        result.divergences,
        result.log
    );
}
