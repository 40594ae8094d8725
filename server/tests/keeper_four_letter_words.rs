//! The assertions of ClickHouse's `tests/integration/test_keeper_four_word_command/test.py`
//! (what Keeper answers to `mntr`, `srst`, `isro`, `srvr`, `stat`, `cons`, `crst`, `dump`,
//! `wchs`, `wchc`, `wchp`, `csnp`, `lgif`), ported to a 3-node keeper-flavor cluster with this
//! repository's client. Where upstream counts nodes ClickHouse itself creates, the count here is
//! relative to the tree before the test's own writes (docs/conformance.md lists the port).

#[allow(dead_code)] // each test binary uses part of it
mod blackbox_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

const WAIT: Duration = Duration::from_secs(10);

async fn word(addr: SocketAddr, w: &str) -> String {
    tokio::time::timeout(WAIT, blackbox_support::four_letter(addr, w)).await.expect("in time")
}

/// `key<sep>value` lines (mntr, lgif: a tab; srvr, stat: a colon).
fn table(text: &str, sep: char) -> BTreeMap<String, String> {
    (text.lines())
        .filter_map(|l| l.split_once(sep))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The `(k=v,...)` fields of a `cons` line.
fn conn_fields(line: &str) -> BTreeMap<String, String> {
    let inner = line.split_once('(').and_then(|(_, r)| r.rsplit_once(')')).map(|(i, _)| i).unwrap_or("");
    inner.split(',').filter_map(|kv| kv.trim().split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

async fn cluster() -> (TestKeeperCluster, u64) {
    // Upstream's configuration allows every word (its test_cmd_conf: `four_letter_word_allow_list=*`).
    let mut cfg = ServerConfig::new(Flavor::Keeper);
    cfg.four_letter_words = None;
    let c = TestKeeperCluster::start(3, cfg, 5).await.expect("cluster starts");
    let leader = c.await_leader(WAIT).await.expect("a leader");
    (c, leader)
}

/// upstream `do_some_action`: creates, gets, sets, ephemerals, exists-watches, deletes.
async fn some_action(
    zk: &Client,
    create: usize,
    get: usize,
    set: usize,
    ephemeral: usize,
    watch: usize,
    delete: usize,
) {
    let open = Acl::open();
    for i in 0..create {
        zk.create(&format!("/test_4lw_normal_node_{i}"), b"", &open, create_mode::PERSISTENT).await.unwrap();
    }
    for i in 0..get {
        zk.get_data(&format!("/test_4lw_normal_node_{i}"), false).await.unwrap();
    }
    for i in 0..set {
        zk.set_data(&format!("/test_4lw_normal_node_{i}"), b"new-value", -1).await.unwrap();
    }
    for i in 0..ephemeral {
        zk.create(&format!("/test_4lw_ephemeral_node_{i}"), b"", &open, create_mode::EPHEMERAL).await.unwrap();
    }
    for i in 0..watch {
        zk.exists(&format!("/test_4lw_normal_node_{i}"), true).await.unwrap();
    }
    for i in create - delete..create {
        zk.delete(&format!("/test_4lw_normal_node_{i}"), -1).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruok_mntr_srst_isro_csnp_lgif_as_keeper_answers_them() {
    let (c, leader) = cluster().await;
    let l = c.addr(leader);
    assert_eq!(word(l, "ruok").await, "imok");
    assert_eq!(word(l, "srst").await.trim(), "Server stats reset.");
    let before: i64 = table(&word(l, "mntr").await, '\t')["zk_znode_count"].parse().unwrap();
    let zk = Client::connect(l, ConnectOptions::default()).await.unwrap();
    some_action(&zk, 10, 10, 5, 2, 2, 2).await;
    let m = table(&word(l, "mntr").await, '\t');
    let n = |k: &str| m.get(k).unwrap_or_else(|| panic!("mntr has no {k}: {m:?}")).parse::<i64>().unwrap();
    assert!(!m["zk_version"].is_empty());
    assert!(n("zk_min_latency") >= 0 && n("zk_min_latency") <= n("zk_avg_latency"));
    assert!(n("zk_max_latency") >= n("zk_avg_latency"));
    assert_eq!(n("zk_num_alive_connections"), 1);
    assert_eq!(n("zk_outstanding_requests"), 0);
    assert_eq!(m["zk_server_state"], "leader");
    // upstream: 14 = 10 created + 3 of ClickHouse's + root and keeper's system nodes; here the
    // test's own 10 (8 left after 2 deletes... upstream deletes 2 of them too) and 2 ephemerals.
    assert_eq!(n("zk_znode_count") - before, 10 - 2 + 2);
    assert_eq!(n("zk_watch_count"), 2);
    assert_eq!(n("zk_ephemerals_count"), 2);
    assert!(n("zk_approximate_data_size") > 0);
    assert!(n("zk_open_file_descriptor_count") > 0 && n("zk_max_file_descriptor_count") > 0);
    assert_eq!((n("zk_followers"), n("zk_synced_followers")), (2, 2));
    assert!(n("zk_packets_sent") >= 31 && n("zk_packets_received") >= 31, "{m:?}");

    assert_eq!(word(l, "srst").await.trim(), "Server stats reset.");
    let m = table(&word(l, "mntr").await, '\t');
    assert_eq!((m["zk_packets_received"].as_str(), m["zk_packets_sent"].as_str()), ("0", "0"));

    // upstream: node1 "rw", node2 "ro"; its node2 is configured as a learner (it "can not be
    // leader", says its test_cmd_rqld), which Keeper answers "ro" for. A follower that can lead
    // answers "rw" in Keeper too; testkeeper has no learners (docs/cluster.md: membership is
    // static, no observers).
    let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
    assert_eq!(word(l, "isro").await, "rw");
    assert_eq!(word(c.addr(f), "isro").await, "rw");

    assert!(word(l, "csnp").await.trim().parse::<u64>().is_ok());
    let g = table(&word(l, "lgif").await, '\t');
    let gi = |k: &str| g[k].parse::<u64>().unwrap();
    assert_eq!((gi("first_log_idx"), gi("first_log_term"), gi("last_log_term")), (1, 1, 1), "{g:?}");
    for k in ["last_log_idx", "last_committed_log_idx", "leader_committed_log_idx", "target_committed_log_idx"] {
        assert!(gi(k) >= 1, "{k}: {g:?}");
    }
    drop(zk);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srvr_stat_cons_crst_count_and_reset_as_keeper_does() {
    let (c, leader) = cluster().await;
    let l = c.addr(leader);
    let before: i64 = table(&word(l, "mntr").await, '\t')["zk_znode_count"].parse().unwrap();
    word(l, "srst").await;
    word(l, "crst").await;
    let zk = Client::connect(l, ConnectOptions::default()).await.unwrap();
    some_action(&zk, 10, 0, 0, 0, 0, 0).await;
    for w in ["srvr", "stat"] {
        let text = word(l, w).await;
        let stats: String = text.lines().filter(|l| !l.contains('=')).collect::<Vec<_>>().join("\n");
        let r = table(&stats, ':');
        assert!(r.contains_key("ClickHouse Keeper version") && r.contains_key("Latency min/avg/max"), "{w}: {text}");
        assert_eq!((r["Received"].as_str(), r["Sent"].as_str()), ("10", "10"), "{w}: {text}");
        assert_eq!(r["Connections"], "1", "{w}");
        assert!(i64::from_str_radix(r["Zxid"].trim_start_matches("0x"), 16).unwrap() >= 10, "{w}");
        assert_eq!(r["Mode"], "leader", "{w}");
        assert_eq!(r["Node count"].parse::<i64>().unwrap() - before, 10, "{w}");
        if w == "stat" {
            let cons: Vec<&str> = text.lines().filter(|l| l.contains('=') && !l.contains("recved=0")).collect();
            assert_eq!(cons.len(), 1, "{text}");
            let f = conn_fields(cons[0]);
            assert_eq!((f["recved"].as_str(), f["sent"].as_str()), ("10", "10"), "{text}");
        }
    }

    let text = word(l, "cons").await;
    let cons: Vec<&str> = text.lines().filter(|l| !l.is_empty() && !l.contains("recved=0")).collect();
    assert_eq!(cons.len(), 1, "{text}");
    let f = conn_fields(cons[0]);
    assert_eq!((f["recved"].as_str(), f["sent"].as_str()), ("10", "10"), "{text}");
    assert!(f.contains_key("sid") && f.contains_key("est") && f.contains_key("lzxid") && f.contains_key("lresp"));
    assert_eq!(f["lop"], "Create", "{text}");
    assert_eq!(f["to"], "30000", "{text}");
    assert_eq!(f["lcxid"], "0x000000000000000a", "{text}");
    for k in ["llat", "minlat", "avglat", "maxlat"] {
        assert!(f[k].parse::<i64>().unwrap() >= 0, "{k}: {text}");
    }

    word(l, "crst").await;
    let text = word(l, "cons").await;
    // Upstream allows 2 or 3 lines: Keeper versions before the `connected` check in
    // `dumpStats` also listed four-letter-word connections (`sid=0xffffffffffffffff`); the
    // current one lists connections with a finished handshake only, as testkeeper does.
    let zk_conns: Vec<&str> = text.lines().filter(|l| !l.is_empty() && !l.contains("sid=0xffffffffffffffff")).collect();
    assert_eq!(zk_conns.len(), 1, "{text}");
    let f = conn_fields(zk_conns[0]);
    assert_eq!((f["recved"].as_str(), f["sent"].as_str(), f["lop"].as_str()), ("0", "0", "NA"), "{text}");
    assert!(f.contains_key("sid") && f.contains_key("est") && !f.contains_key("lcxid"), "{text}");
    assert_eq!((f["to"].as_str(), f["lzxid"].as_str(), f["lresp"].as_str()), ("30000", "0xffffffffffffffff", "0"));
    for k in ["llat", "minlat", "avglat", "maxlat"] {
        assert_eq!(f[k], "0", "{k}: {text}");
    }
    drop(zk);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dump_wchs_wchc_wchp_list_what_keeper_lists() {
    let (c, leader) = cluster().await;
    let l = c.addr(leader);
    let zk = Client::connect(l, ConnectOptions::default()).await.unwrap();
    some_action(&zk, 2, 0, 0, 2, 2, 0).await;

    let text = word(l, "dump").await;
    let lines: Vec<&str> = text.lines().collect();
    let sessions: i64 = lines[0].split_once('(').and_then(|(_, r)| r.split_once(')')).unwrap().0.parse().unwrap();
    assert_eq!(sessions, 1, "{text}");
    assert!(
        lines.contains(&"\t/test_4lw_ephemeral_node_0") && lines.contains(&"\t/test_4lw_ephemeral_node_1"),
        "{text}"
    );

    let text = word(l, "wchs").await;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let (conns, rest) = lines[0].split_once(" connections watching ").expect("wchs first line");
    assert_eq!((conns, rest), ("1", "2 paths"), "{text}");
    assert_eq!(lines[1].replace(' ', ""), "Totalwatches:2", "{text}");

    let text = word(l, "wchc").await;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines.contains(&"\t/test_4lw_normal_node_0") && lines.contains(&"\t/test_4lw_normal_node_1"), "{text}");

    let text = word(l, "wchp").await;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines.contains(&"/test_4lw_normal_node_0") && lines.contains(&"/test_4lw_normal_node_1"), "{text}");
    drop(zk);
    c.shutdown().await;
}

/// upstream `test_cmd_conf`: the server id, port, allow list and where the log and snapshots
/// live (on a server with a data directory: its `log` and `snapshots`, on Keeper's local disks),
/// in Keeper's order: the storage lines right after the allow list.
#[tokio::test]
async fn conf_names_the_storage_of_a_durable_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = testkeeper_server::embed::TestKeeper::builder()
        .flavor(Flavor::Keeper)
        .data_dir(dir.path())
        .config(|c| c.four_letter_words = None)
        .start()
        .await
        .unwrap();
    let text = word(server.addr(), "conf").await;
    let conf = table(&text, '=');
    assert_eq!(conf["server_id"], "1");
    assert_eq!(conf["tcp_port"], server.addr().port().to_string());
    assert_eq!(conf["four_letter_word_allow_list"], "*");
    assert!(!conf.contains_key("tcp_port_secure") && !conf.contains_key("superdigest"), "{text}");
    assert_eq!(conf["log_storage_path"], dir.path().join("log").display().to_string());
    assert_eq!(conf["log_storage_disk"], "LocalLogDisk");
    assert_eq!(conf["snapshot_storage_path"], dir.path().join("snapshots").display().to_string());
    assert_eq!(conf["snapshot_storage_disk"], "LocalSnapshotDisk");
    let keys: Vec<&str> = text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    let at = keys.iter().position(|k| *k == "four_letter_word_allow_list").unwrap();
    assert_eq!(
        keys[at + 1..at + 5],
        ["log_storage_path", "log_storage_disk", "snapshot_storage_path", "snapshot_storage_disk"]
    );
    // In memory there is no storage to name.
    let mem =
        testkeeper_server::embed::TestKeeper::builder().config(|c| c.four_letter_words = None).start().await.unwrap();
    assert!(!word(mem.addr(), "conf").await.contains("log_storage_path"));
}
