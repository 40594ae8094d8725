//! Keeper's HTTP contract over a real socket, in both flavors: the storage API
//! (`/api/v1/storage/{exists,list,get,set,create,remove}/<path>`) with the codes, content
//! types and bodies of ClickHouse's `KeeperHTTPStorageHandler.cpp`, `/dashboard` and
//! `/dashboard/content` with `KeeperDashboardRequestHandler.cpp`'s field names, and 503 from a
//! cluster node that has lost its leader. No request carries an extra header: curl's view.

mod faults_support;
#[allow(dead_code)] // each test binary uses part of it
mod http_support;

use std::time::{Duration, Instant};

use faults_support::{connect, start, within};
use http_support::{expect, four_letter_word, get, post, req};
use serde_json::Value;
use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;

const NOT_FOUND: &str = "Requested node not found.\n";
const CONFLICT: &str = "Version conflict. Check the current version and try again.\n";

/// The storage API's requests in the order a Keeper user runs them, each with Keeper's answer.
async fn storage_contract(flavor: Flavor) {
    let mut tk = start(flavor, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let c = connect(&tk).await;

    // create: 200 "OK\n", the body as the data; a second create is "Node exists" (500).
    let a = post(h, "/api/v1/storage/create/test_storage", b"hello").await;
    expect(&a, 200, "OK\n");
    assert!(a.content_type.starts_with("text/plain"), "{a:?}");
    let (data, stat) = within(c.get_data("/test_storage", false)).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"hello"[..], 0));
    expect(
        &post(h, "/api/v1/storage/create/test_storage", b"again").await,
        500,
        "Keeper request finished with error: Node exists.\n",
    );
    expect(&post(h, "/api/v1/storage/create/no_parent/child", b"").await, 404, NOT_FOUND);

    // exists: {"stat": {...}} with Keeper's eleven field names.
    let a = get(h, "/api/v1/storage/exists/test_storage").await;
    assert_eq!((a.status, a.content_type.as_str()), (200, "application/json"), "{a:?}");
    let v = a.json();
    let stat = v["stat"].as_object().expect("stat object");
    let mut keys: Vec<&str> = stat.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "aversion",
            "ctime",
            "cversion",
            "czxid",
            "dataLength",
            "ephemeralOwner",
            "mtime",
            "mzxid",
            "numChildren",
            "pzxid",
            "version"
        ]
    );
    assert_eq!((stat["dataLength"].as_i64(), stat["version"].as_i64()), (Some(5), Some(0)));
    assert_eq!(v.as_object().unwrap().len(), 1, "only \"stat\": {v}");
    expect(&get(h, "/api/v1/storage/exists/missing").await, 404, NOT_FOUND);

    // get: the raw bytes, as application/octet-stream.
    let a = get(h, "/api/v1/storage/get/test_storage").await;
    assert_eq!(
        (a.status, a.content_type.as_str(), a.body.as_slice()),
        (200, "application/octet-stream", &b"hello"[..])
    );
    expect(&get(h, "/api/v1/storage/get/missing").await, 404, NOT_FOUND);

    // list: {"child_node_names": [...], "stat": {...}}.
    post(h, "/api/v1/storage/create/test_storage/a", b"").await;
    post(h, "/api/v1/storage/create/test_storage/b", b"").await;
    let a = get(h, "/api/v1/storage/list/test_storage").await;
    assert_eq!((a.status, a.content_type.as_str()), (200, "application/json"), "{a:?}");
    let v = a.json();
    let mut names: Vec<&str> = v["child_node_names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(v["stat"]["numChildren"].as_i64(), Some(2));
    let root = get(h, "/api/v1/storage/list").await.json();
    assert!(root["child_node_names"].as_array().unwrap().iter().any(|n| n == "test_storage"), "{root}");
    expect(&get(h, "/api/v1/storage/list/missing").await, 404, NOT_FOUND);

    // set: needs a whole version; a wrong one is 409; the right one 200 "OK\n".
    let no_version = "Version parameter is not set or invalid for set request.\n";
    expect(&post(h, "/api/v1/storage/set/test_storage", b"x").await, 400, no_version);
    expect(&post(h, "/api/v1/storage/set/test_storage?version=abc", b"x").await, 400, no_version);
    expect(&post(h, "/api/v1/storage/set/test_storage?version=7", b"x").await, 409, CONFLICT);
    expect(&post(h, "/api/v1/storage/set/test_storage?version=0", b"world").await, 200, "OK\n");
    assert_eq!(get(h, "/api/v1/storage/get/test_storage").await.body, b"world");
    assert_eq!(get(h, "/api/v1/storage/exists/test_storage").await.json()["stat"]["version"].as_i64(), Some(1));
    expect(&post(h, "/api/v1/storage/set/missing?version=-1", b"x").await, 404, NOT_FOUND);

    // remove: needs a version; a node with children is "Not empty" (500).
    let no_version = "Version parameter is not set or invalid for remove request.\n";
    expect(&post(h, "/api/v1/storage/remove/test_storage/a", b"").await, 400, no_version);
    expect(&post(h, "/api/v1/storage/remove/test_storage/a?version=3", b"").await, 409, CONFLICT);
    expect(&post(h, "/api/v1/storage/remove/test_storage/a?version=0", b"").await, 200, "OK\n");
    expect(
        &post(h, "/api/v1/storage/remove/test_storage?version=-1", b"").await,
        500,
        "Keeper request finished with error: Not empty.\n",
    );
    expect(&post(h, "/api/v1/storage/remove/test_storage/b?version=-1", b"").await, 200, "OK\n");
    expect(&post(h, "/api/v1/storage/remove/test_storage?version=1", b"").await, 200, "OK\n");
    expect(&get(h, "/api/v1/storage/exists/test_storage").await, 404, NOT_FOUND);
    assert!(within(c.exists("/test_storage", false)).await.unwrap().is_none());
    expect(&post(h, "/api/v1/storage/remove/test_storage?version=-1", b"").await, 404, NOT_FOUND);

    // The path as Poco splits it, and the operation word.
    expect(&get(h, "/api/v1/storage").await, 400, "Invalid storage request path.\n");
    expect(&get(h, "/api/v1/storage/").await, 400, "Invalid storage request path.\n");
    expect(&get(h, "/api/v1/storage/rename/x").await, 400, "Storage operation is not supported.\n");
    expect(&post(h, "/api/v1/storage/create//sp%20ace//", b"1").await, 200, "OK\n");
    assert_eq!(within(c.get_data("/sp ace", false)).await.unwrap().0, b"1");
    // Keeper takes GET, HEAD and POST for every operation (a GET create creates).
    expect(&get(h, "/api/v1/storage/create/by_get").await, 200, "OK\n");
    let head = req(h, "HEAD", "/api/v1/storage/exists/by_get", &[], b"").await;
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(req(h, "PUT", "/api/v1/storage/set/by_get?version=0", &[], b"x").await.status, 405);

    // A browser page from elsewhere cannot create, even with a GET (an <img src>): the guard.
    let cross = ["Sec-Fetch-Site: cross-site"];
    assert_eq!(req(h, "GET", "/api/v1/storage/create/evil", &cross, b"").await.status, 403);
    let other = ["Origin: http://127.0.0.1:1"];
    assert_eq!(req(h, "POST", "/api/v1/storage/create/evil", &other, b"").await.status, 403);
    assert_eq!(req(h, "GET", "/api/v1/storage/create/evil", &["Origin: http://evil.example"], b"").await.status, 403);
    assert!(within(c.exists("/evil", false)).await.unwrap().is_none());
    // ...but may read what the same-origin dashboard reads only from its own origin.
    let own = format!("Origin: http://{h}");
    assert_eq!(req(h, "POST", "/api/v1/storage/create/own", &[own.as_str()], b"").await.status, 200);

    tk.shutdown().await;
}

#[tokio::test]
async fn storage_api_as_keeper_serves_it_keeper_flavor() {
    storage_contract(Flavor::Keeper).await;
}

#[tokio::test]
async fn storage_api_as_keeper_serves_it_zookeeper_flavor() {
    storage_contract(Flavor::Zookeeper).await;
}

/// A request a fault rule holds past Keeper's operation timeout is answered 500 with Keeper's
/// timeout text rather than hanging; the rule's event shows it did hold it.
#[tokio::test]
async fn a_held_storage_request_times_out_as_in_keeper() {
    let mut tk = start(Flavor::Keeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    expect(&post(h, "/api/v1/storage/create/slow", b"x").await, 200, "OK\n");
    tk.add_fault("delay:ms=60000,op=getData,path=/slow").unwrap();
    expect(&get(h, "/api/v1/storage/get/slow").await, 500, "Operation timeout (10000 ms) exceeded.\n");
    assert_eq!(tk.fault_events().len(), 1);
    // Other operations on the node are not held.
    assert_eq!(get(h, "/api/v1/storage/exists/slow").await.status, 200);
    tk.shutdown().await;
}

#[tokio::test]
async fn dashboard_page_and_keepers_content_json() {
    let mut tk = start(Flavor::Keeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let _c = connect(&tk).await;
    let page = get(h, "/dashboard").await;
    assert_eq!((page.status, page.content_type.as_str()), (200, "text/html; charset=utf-8"));
    assert!(page.text().contains("<title>testkeeper dashboard</title>"));

    let a = get(h, "/dashboard/content").await;
    assert_eq!((a.status, a.content_type.as_str()), (200, "application/json"), "{a:?}");
    let v = a.json();
    assert!(v["ch_version"].as_str().unwrap().starts_with("testkeeper-"), "{v}");
    let d = &v["keeper_details"];
    assert_eq!(d["role"], "standalone");
    assert!(d["latency_avg"].is_u64(), "{v}");
    // Keeper prints these two as strings.
    assert_eq!(d["alive_connections"], "1");
    assert_eq!(d["node_count"].as_str().unwrap().parse::<usize>().unwrap(), tk.node_count());
    let cl = &v["cluster"];
    assert_eq!(
        (cl["leader_id"].as_u64(), cl["self_id"].as_u64(), cl["has_leader"].as_bool()),
        (Some(1), Some(1), Some(true))
    );
    assert_eq!(cl["http_port"].as_u64(), Some(u64::from(h.port())));
    let m = &cl["members"][0];
    for key in [
        "server_id",
        "endpoint",
        "is_observer",
        "priority",
        "is_leader",
        "is_self",
        "last_log_index",
        "is_alive",
        "is_synced",
        "last_succ_resp_ms",
    ] {
        assert!(m.get(key).is_some(), "member lacks {key}: {v}");
    }
    assert!(m["last_log_index"].is_string(), "{v}");

    // testkeeper's own summary: the digest, sessions with their ephemerals and watches.
    let s = get(h, "/api/v1/dashboard").await.json();
    assert_eq!(s["digest"].as_str().unwrap().len(), 16, "{s}");
    assert_eq!(s["sessions"].as_array().unwrap().len(), 1, "{s}");
    let found = get(h, "/api/v1/dashboard/search?q=quot").await.json();
    assert_eq!(found, serde_json::json!({"query": "quot", "total": 1, "paths": ["/zookeeper/quota"]}));
    tk.shutdown().await;
}

/// A cluster, as ClickHouse's `test_keeper_http_control/test.py` checks one: `/ready` is 200
/// with role `leader` on the leader and `follower`/`hasLeader: true` on a follower; the
/// leader's `/dashboard/content` knows its peers' health. A follower whose leader and quorum
/// are gone answers `/ready` with 503 `fail` and `hasLeader: false` (the test's partitioned
/// case), the storage API with 503 as Keeper does when its server is not active, and
/// `/dashboard/content` without `keeper_details`.
#[tokio::test]
async fn storage_api_is_503_without_a_leader() {
    let mut cfg = ServerConfig::new(Flavor::Keeper);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    let mut cluster = TestKeeperCluster::start(3, cfg, 11).await.expect("cluster");
    let leader = cluster.await_leader(Duration::from_secs(20)).await.expect("leader");
    let follower = cluster.ids().into_iter().find(|&id| id != leader).unwrap();
    let http = cluster.node(follower).unwrap().start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let h = http.addr();
    let lead_http = cluster.node(leader).unwrap().start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let lh = lead_http.addr();
    let ready = get(lh, "/ready").await;
    assert_eq!(ready.status, 200, "{ready:?}");
    let v = ready.json();
    assert_eq!((v["status"].as_str(), v["details"]["role"].as_str()), (Some("ok"), Some("leader")), "{v}");
    let ready = get(h, "/ready").await;
    assert_eq!(ready.status, 200, "{ready:?}");
    let v = ready.json();
    assert_eq!(
        (v["status"].as_str(), v["details"]["role"].as_str(), v["details"]["hasLeader"].as_bool()),
        (Some("ok"), Some("follower"), Some(true)),
        "{v}"
    );
    // ClickHouse's test_keeper_http_control, test_http_commands_basic_responses: `conf` over
    // HTTP is 200 and its "result" is exactly the four-letter word's answer on the client
    // port, on the leader and on a follower.
    for (id, http_addr) in [(leader, lh), (follower, h)] {
        let a = get(http_addr, "/api/v1/commands/conf").await;
        assert_eq!((a.status, a.content_type.as_str()), (200, "application/json"), "{a:?}");
        let tcp = four_letter_word(cluster.node(id).unwrap().addr(), "conf").await;
        // Keeper's `conf` (KeeperConfigurationAndSettings::dump): this node's id first.
        assert!(tcp.starts_with(&format!("server_id={id}\n")), "{tcp}");
        assert_eq!(a.json()["result"].as_str(), Some(tcp.as_str()), "node {id}");
    }
    // The leader sees its followers alive and synced once they have heard from it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = get(lh, "/dashboard/content").await.json();
        let peers: Vec<&Value> =
            c["cluster"]["members"].as_array().unwrap().iter().filter(|m| m["is_self"] == false).collect();
        if c["cluster"]["peer_health_available"] == true
            && peers.len() == 2
            && peers.iter().all(|m| m["is_alive"] == true && m["is_synced"] == true && m["last_log_index"].is_string())
        {
            break;
        }
        assert!(Instant::now() < deadline, "the leader never saw healthy peers: {c}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    lead_http.stop().await;
    // Through a follower, the write reaches the leader and comes back applied.
    expect(&post(h, "/api/v1/storage/create/via_follower", b"f").await, 200, "OK\n");
    assert_eq!(get(h, "/api/v1/storage/get/via_follower").await.body, b"f");
    let content = get(h, "/dashboard/content").await.json();
    let members = content["cluster"]["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{content}");
    assert_eq!(content["cluster"]["leader_id"].as_u64(), Some(leader), "{content}");
    assert!(members.iter().all(|m| !m["endpoint"].as_str().unwrap().is_empty()), "{content}");

    for id in cluster.ids() {
        if id != follower {
            cluster.kill(id).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = get(h, "/api/v1/storage/get/via_follower").await;
        if a.status == 503 {
            expect(&a, 503, "Service Unavailable.\n");
            break;
        }
        assert!(Instant::now() < deadline, "still answering without a quorum: {a:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready = get(h, "/ready").await;
    assert_eq!(ready.status, 503, "{ready:?}");
    let v = ready.json();
    assert_eq!(
        (v["status"].as_str(), v["details"]["role"].as_str(), v["details"]["hasLeader"].as_bool()),
        (Some("fail"), Some("follower"), Some(false)),
        "{v}"
    );
    let content = get(h, "/dashboard/content").await.json();
    assert!(content.get("keeper_details").is_none(), "{content}");
    http.stop().await;
    cluster.shutdown().await;
}
