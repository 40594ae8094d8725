//! The proxy between embedded testkeepers: an upstream, an oracle, and replay targets. A
//! client workload (creates, sets, a failing create, watches, a multi with a failing op,
//! ephemerals, a session closed by another connection's view) goes through it:
//! - with an oracle of the upstream's flavor, nothing is flagged and the client sees exactly
//!   the upstream's answers;
//! - with an oracle that answers one request wrongly, that request is the first divergence;
//! - the recording replays against a fresh server with no difference, and against a server
//!   that answers one request otherwise, that request is the difference.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use testkeeper_conformance::proxy::{Divergence, Meta, Proxy, ProxyConfig, Recorder};
use testkeeper_conformance::replay::replay;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::Acl;

async fn server(flavor: Flavor) -> TestKeeper {
    let mut cfg = ServerConfig::new(flavor);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    TestKeeper::start(cfg).await.unwrap()
}

async fn proxy(upstream: SocketAddr, oracle: Option<SocketAddr>, record: Option<&std::path::Path>) -> Proxy {
    let recorder = record.map(|p| {
        let meta = Meta { upstream: upstream.to_string(), flavor: "zookeeper".into(), recorded_with: "test".into() };
        Recorder::create(p, &meta).unwrap()
    });
    let cfg = ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
        oracle,
        flavors_differ: false,
        recorder,
        on_divergence: Box::new(|d: &Divergence| eprintln!("{d}")),
    };
    Proxy::start(cfg).await.unwrap()
}

/// What a ZooKeeper client does, through `addr`; returns what it saw, for comparing with a
/// direct run.
async fn workload(addr: SocketAddr) -> Vec<String> {
    let open = Acl::open();
    let mut seen = Vec::new();
    let mut a = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let b = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut a_events = a.events().unwrap();
    seen.push(format!("{:?}", a.create("/app", b"root", &open, 0).await));
    seen.push(format!("{:?}", a.create("/app", b"again", &open, 0).await.map_err(|e| e.code())));
    seen.push(format!("{:?}", a.create("/app/q-", b"", &open, 2).await));
    seen.push(format!("{:?}", a.get_data("/app", true).await.map(|(d, s)| (d, s.version))));
    seen.push(format!("{:?}", b.set_data("/app", b"changed", 0).await.map(|s| s.version)));
    seen.push(format!("{:?}", b.create("/app/eph", b"", &open, 1).await));
    seen.push(format!("{:?}", a.exists("/app/eph", true).await.map(|s| s.map(|s| s.num_children))));
    let multi = vec![
        testkeeper_conformance::parse::op("create /app/m \"\"").unwrap().request(""),
        testkeeper_conformance::parse::op("delete /app/missing").unwrap().request(""),
    ];
    seen.push(format!("{:?}", a.multi(multi).await.map(|r| r.len())));
    seen.push(format!(
        "{:?}",
        a.get_children2("/app", false).await.map(|(mut c, s)| {
            c.sort();
            (c, s.num_children)
        })
    ));
    let _ = b.close().await;
    seen.push(format!("{:?}", a.sync("/app").await));
    seen.push(format!("{:?}", a.get_data("/app/broken", false).await.map_err(|e| e.code())));
    let _ = a.ping().await;
    while let Ok(ev) = a_events.try_recv() {
        seen.push(format!("event {} {}", ev.event.event_type, ev.event.path));
    }
    let _ = a.close().await;
    seen
}

#[tokio::test]
async fn an_oracle_of_the_same_flavor_flags_nothing_and_clients_get_the_upstreams_answers() {
    let (up, oracle, direct) =
        (server(Flavor::Zookeeper).await, server(Flavor::Zookeeper).await, server(Flavor::Zookeeper).await);
    let p = proxy(up.addr(), Some(oracle.addr()), None).await;
    let through = workload(p.addr()).await;
    assert_eq!(through, workload(direct.addr()).await, "the proxy changed what the client saw");
    assert_eq!(p.connections(), 2);
    let found = p.shutdown().await;
    assert!(found.is_empty(), "{found:#?}");
    // The oracle did the same work: the same tree.
    assert_eq!(up.node_count(), oracle.node_count());
}

#[tokio::test]
async fn a_broken_oracle_is_flagged_at_its_first_wrong_reply_naming_the_request() {
    let (up, oracle) = (server(Flavor::Zookeeper).await, server(Flavor::Zookeeper).await);
    oracle.add_fault("error:code=-110,op=create,path=/app/eph,count=1").unwrap();
    let p = proxy(up.addr(), Some(oracle.addr()), None).await;
    workload(p.addr()).await;
    let found = p.shutdown().await;
    let first = found.first().expect("the wrong reply is flagged");
    assert_eq!(first.op, "create /app/eph \"\" flags=1", "{found:#?}");
    assert!(first.keys.iter().any(|k| k.key == "result.err"), "{first:?}");
    assert!(first.to_string().contains("request 6 `create /app/eph"), "{first}");
}

#[tokio::test]
async fn a_recording_replays_without_difference_and_a_changed_answer_is_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let up = server(Flavor::Zookeeper).await;
    let p = proxy(up.addr(), None, Some(&rec)).await;
    workload(p.addr()).await;
    assert!(p.shutdown().await.is_empty());
    let fresh = server(Flavor::Zookeeper).await;
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let report = replay(&rec, fresh.addr(), false, &mut |d| sink.lock().unwrap().push(d.clone())).await.unwrap();
    assert!(report.differences.is_empty(), "{:#?}", report.differences);
    assert_eq!((report.connections, report.not_replayable), (2, 0));
    assert!(report.requests >= 14, "{report:?}");
    // A server that answers the sync otherwise.
    let other = server(Flavor::Zookeeper).await;
    other.add_fault("error:code=-101,op=sync,count=1").unwrap();
    let report = replay(&rec, other.addr(), false, &mut |_| {}).await.unwrap();
    let first = report.differences.first().expect("the changed answer is found");
    assert!(first.op.starts_with("sync /app"), "{:#?}", report.differences);
    assert!(got.lock().unwrap().is_empty());
}
