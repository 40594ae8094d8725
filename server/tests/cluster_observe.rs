//! What a 3-node in-process cluster tells its observers: `mntr`'s role and the leader's
//! followers per flavor, `lgif` from the Raft log, `rqld`/`ydld` (and their HTTP routes)
//! moving the leadership, `/ready` in Keeper's JSON (503 without a leader), the words a node
//! without a leader refuses, and the Raft gauges of `/metrics`.

mod faults_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use faults_support::http;
use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::http::HttpServer;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(15);

fn seed() -> u64 {
    let s = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    println!("seed {s} (TESTKEEPER_SEED={s} replays it)");
    s
}

async fn word(addr: SocketAddr, w: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(w.as_bytes()).await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(WAIT, s.read_to_string(&mut out)).await.expect("in time").unwrap();
    out
}

fn table(text: &str) -> BTreeMap<String, String> {
    text.lines().filter_map(|l| l.split_once('\t')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Polls `probe` until it holds, or fails with `what`.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut probe: impl FnMut() -> F) {
    let until = Instant::now() + WAIT;
    while !probe().await {
        assert!(Instant::now() < until, "{what} did not happen within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A started cluster, its leader, and an HTTP endpoint per node.
async fn cluster(flavor: Flavor) -> (TestKeeperCluster, u64, BTreeMap<u64, HttpServer>) {
    let c = TestKeeperCluster::start(3, ServerConfig::new(flavor), seed()).await.expect("start");
    let leader = c.await_leader(WAIT).await.expect("a leader");
    let mut h = BTreeMap::new();
    for id in c.ids() {
        h.insert(id, c.node(id).unwrap().start_http("127.0.0.1:0".parse().unwrap()).await.unwrap());
    }
    (c, leader, h)
}

async fn writes(addr: SocketAddr, n: usize) {
    let zk = Client::connect(addr, ConnectOptions::default()).await.expect("connect");
    for i in 0..n {
        zk.create(&format!("/w{i}"), b"", &Acl::open(), create_mode::PERSISTENT).await.expect("create");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mntr_and_srvr_name_the_role_and_the_leader_counts_its_followers() {
    for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
        let (mut c, leader, _h) = cluster(flavor).await;
        let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
        eventually("the leader sees both followers replicate", || async {
            let m = table(&word(c.addr(leader), "mntr").await);
            m.get("zk_synced_followers").map(String::as_str) == Some("2")
        })
        .await;
        let m = table(&word(c.addr(leader), "mntr").await);
        assert_eq!(m["zk_server_state"], "leader", "{flavor:?} {m:?}");
        let mf = table(&word(c.addr(f), "mntr").await);
        assert_eq!(mf["zk_server_state"], "follower");
        assert!(!mf.contains_key("zk_synced_followers") && !mf.contains_key("zk_followers"), "{mf:?}");
        assert!(word(c.addr(f), "srvr").await.contains("Mode: follower\n"));
        match flavor {
            Flavor::Keeper => {
                assert_eq!(m["zk_followers"], "2");
                assert!(!m.contains_key("zk_learners"), "{m:?}");
            }
            Flavor::Zookeeper => {
                assert_eq!((m["zk_learners"].as_str(), m["zk_pending_syncs"].as_str()), ("2", "0"));
                assert!(!m.contains_key("zk_followers"), "{m:?}");
                assert_eq!((m["zk_quorum_size"].as_str(), mf["zk_quorum_size"].as_str()), ("3", "3"));
            }
        }
        // A dead follower: Keeper counts it while it is within stale_log_gap; ZooKeeper's
        // leader drops it from its learners once it stops hearing from it.
        c.kill(f).await;
        match flavor {
            Flavor::Keeper => {
                tokio::time::sleep(Duration::from_millis(600)).await;
                let m = table(&word(c.addr(leader), "mntr").await);
                assert_eq!((m["zk_followers"].as_str(), m["zk_synced_followers"].as_str()), ("2", "2"), "{m:?}");
            }
            Flavor::Zookeeper => {
                eventually("the leader drops the dead learner", || async {
                    let m = table(&word(c.addr(leader), "mntr").await);
                    m.get("zk_learners").map(String::as_str) == Some("1")
                        && m.get("zk_synced_followers").map(String::as_str) == Some("1")
                })
                .await;
            }
        }
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lgif_reads_the_raft_log_on_every_node() {
    let (c, leader, h) = cluster(Flavor::Keeper).await;
    writes(c.addr(leader), 5).await;
    let top = c.statuses().iter().map(|s| s.applied).max().unwrap();
    c.await_applied(top, WAIT).await.unwrap();
    let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
    // The follower hears the leader's commit index with its next heartbeat.
    eventually("the follower learns the leader's commit", || async {
        let l = table(&word(c.addr(f), "lgif").await);
        l["leader_committed_log_idx"].parse::<u64>().unwrap() >= top
    })
    .await;
    for id in c.ids() {
        let text = word(c.addr(id), "lgif").await;
        assert_eq!(text.lines().count(), 12, "{text}");
        let l = table(&text);
        let n = |k: &str| l[k].parse::<u64>().unwrap();
        assert_eq!(n("first_log_term"), n("first_log_idx"), "Keeper prints the first index there: {text}");
        assert!(n("last_log_idx") >= top && n("last_committed_log_idx") >= top, "node {id}: {text}");
        assert!(n("target_committed_log_idx") >= n("last_committed_log_idx"), "node {id}: {text}");
        assert_eq!(n("last_log_term"), c.node(id).unwrap().status().term, "node {id}: {text}");
        // The HTTP status reads the same log.
        let (code, body) = http(h[&id].addr(), "GET", "/api/v1/cluster", "").await;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!((code, v["id"].as_u64()), (200, Some(id)), "{body}");
        assert!(v["last_index"].as_u64().unwrap() >= top, "{body}");
        assert_eq!(v["followers"].as_array().unwrap().len(), if id == leader { 2 } else { 0 }, "{body}");
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rqld_and_ydld_move_the_leadership_and_so_do_their_routes() {
    let (c, leader, h) = cluster(Flavor::Keeper).await;
    let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
    assert_eq!(word(c.addr(f), "rqld").await, "Sent leadership request to leader.");
    eventually("node f leads after rqld", || async { c.leader() == Some(f) }).await;
    c.await_leader(WAIT).await.unwrap();
    assert_eq!(word(c.addr(f), "ydld").await, "Sent yield leadership request to leader.");
    eventually("node f hands the leadership on after ydld", || async { c.leader().is_some_and(|l| l != f) }).await;
    // The same over HTTP, for any node, from any node.
    let now = c.await_leader(WAIT).await.unwrap();
    let other = c.ids().into_iter().find(|i| *i != now).unwrap();
    let (code, body) =
        http(h[&now].addr(), "POST", "/api/v1/cluster/transfer-leadership", &format!("{{\"to\":{other}}}")).await;
    assert_eq!(code, 200, "{body}");
    eventually("the route moved the leadership", || async { c.leader() == Some(other) }).await;
    let (code, body) = http(h[&now].addr(), "POST", "/api/v1/cluster/transfer-leadership", "{\"to\":9}").await;
    assert!(code == 400 && body.contains("not a member"), "{code} {body}");
    let (code, body) = http(h[&now].addr(), "POST", "/api/v1/cluster/transfer-leadership", "not json").await;
    assert_eq!(code, 400, "{body}");
    c.await_leader(WAIT).await.unwrap();
    let (code, _) = http(h[&other].addr(), "POST", "/api/v1/cluster/yield-leadership", "").await;
    assert_eq!(code, 200);
    eventually("the yield route moved it on", || async { c.leader().is_some_and(|l| l != other) }).await;
    // Writes go on under the new leader.
    let l = c.await_leader(WAIT).await.unwrap();
    writes(c.addr(l), 1).await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_a_leader_is_not_ready_and_says_so() {
    for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
        let (c, leader, h) = cluster(flavor).await;
        let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
        for id in c.ids() {
            let (code, body) = http(h[&id].addr(), "GET", "/ready", "").await;
            let role = if id == leader { "leader" } else { "follower" };
            assert_eq!(
                (code, body),
                (200, format!("{{\"details\":{{\"hasLeader\":true,\"role\":\"{role}\"}},\"status\":\"ok\"}}"))
            );
        }
        c.isolate(f);
        eventually("the isolated node loses its leader", || async { c.node(f).unwrap().status().leader == 0 }).await;
        let (code, body) = http(h[&f].addr(), "GET", "/ready", "").await;
        assert_eq!(code, 503, "{body}");
        assert_eq!(body, "{\"details\":{\"hasLeader\":false,\"role\":\"follower\"},\"status\":\"fail\"}");
        let not_serving = match flavor {
            Flavor::Keeper => "This instance is not currently serving requests",
            Flavor::Zookeeper => "This ZooKeeper instance is not currently serving requests\n",
        };
        for w in ["mntr", "srvr", "stat", "cons"] {
            assert_eq!(word(c.addr(f), w).await, not_serving, "{flavor:?} {w}");
        }
        assert_eq!(word(c.addr(f), "ruok").await, "imok");
        if flavor == Flavor::Keeper {
            assert_eq!(word(c.addr(f), "rqld").await, "Failed to send leadership request to leader.");
        } else {
            assert_eq!(word(c.addr(f), "isro").await, "null");
        }
        c.heal();
        eventually("the node is ready again", || async { http(h[&f].addr(), "GET", "/ready", "").await.0 == 200 })
            .await;
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_carry_role_term_commit_and_applied_index() {
    let (c, leader, h) = cluster(Flavor::Keeper).await;
    writes(c.addr(leader), 3).await;
    let (code, body) = http(h[&leader].addr(), "GET", "/metrics", "").await;
    assert_eq!(code, 200);
    let term = c.node(leader).unwrap().status().term;
    for line in [
        "testkeeper_raft_role{role=\"leader\"} 1".to_string(),
        "testkeeper_raft_role{role=\"follower\"} 0".to_string(),
        format!("testkeeper_raft_term {term}"),
        format!("testkeeper_raft_leader {leader}"),
        "testkeeper_raft_followers 2".to_string(),
        "testkeeper_raft_stopped 0".to_string(),
    ] {
        assert!(body.lines().any(|l| l == line), "no `{line}` in:\n{body}");
    }
    let gauge = |name: &str| -> u64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert!(gauge("testkeeper_raft_commit_index") >= gauge("testkeeper_raft_applied_index"));
    assert!(gauge("testkeeper_raft_applied_index") >= 3);
    c.shutdown().await;
}
