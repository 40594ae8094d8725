//! Session and connection control over HTTP (list, expire, drop, reset), JSON fault rules and
//! what their events carry, and the new kinds: delay jitter, blackhole, refuse.

mod faults_support;

use std::time::{Duration, Instant};

use faults_support::{connect, http, http_with, mk, start, within};
use serde_json::Value;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions};

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

const JSON: &[&str] = &["Content-Type: application/json"];

#[tokio::test]
async fn sessions_listed_expired_and_connections_dropped_over_http() {
    let mut tk = start(Flavor::Zookeeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let a = connect(&tk).await;
    let b = connect(&tk).await;
    within(a.create("/eph", b"", &testkeeper_wire::Acl::open(), 1)).await.unwrap();

    let (status, body) = http(h, "GET", "/api/v1/sessions", "").await;
    assert_eq!(status, 200, "{body}");
    let list = json(&body)["sessions"].as_array().unwrap().clone();
    let ids: Vec<&str> = list.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![format!("{:#x}", a.session_id()), format!("{:#x}", b.session_id())]);
    assert_eq!(
        (list[0]["ephemerals"].as_u64(), list[0]["timeout_ms"].as_i64()),
        (Some(1), Some(a.negotiated_timeout_ms() as i64))
    );

    // Expire a over HTTP: its ephemeral goes, its resume is refused.
    let (status, body) =
        http_with(h, "POST", &format!("/api/v1/sessions/{:#x}/expire", a.session_id()), JSON, "").await;
    assert_eq!((status, json(&body)["expired"].as_str()), (200, Some(format!("{:#x}", a.session_id()).as_str())));
    tk.await_no_node("/eph").await.unwrap();
    tk.await_sessions(1).await.unwrap();
    let resumed = Client::connect(tk.addr(), ConnectOptions::resume(a.session_id(), a.session_passwd().to_vec())).await;
    assert!(resumed.is_err(), "an expired session cannot be resumed");
    let (status, body) =
        http_with(h, "POST", &format!("/api/v1/sessions/{:#x}/expire", a.session_id()), JSON, "").await;
    assert_eq!(status, 404, "{body}");
    assert!(json(&body)["error"].as_str().unwrap().contains("no live session"));
    assert_eq!(http_with(h, "POST", "/api/v1/sessions/zz/expire", JSON, "").await.0, 400);

    // Drop b's connection: the session survives and b resumes it.
    let (_, body) = http(h, "GET", "/api/v1/connections", "").await;
    let conns = json(&body)["connections"].as_array().unwrap().clone();
    let conn = conns.iter().find(|c| c["session"] == format!("{:#x}", b.session_id())).expect("b's connection");
    let id = conn["id"].as_u64().unwrap();
    assert_eq!(http(h, "DELETE", &format!("/api/v1/connections/{id}"), "").await.0, 204);
    assert!(within(b.exists("/", false)).await.is_err(), "b's connection is gone");
    let again = within(Client::connect(tk.addr(), ConnectOptions::resume(b.session_id(), b.session_passwd().to_vec())))
        .await
        .expect("the session outlives its connection");
    assert_eq!(again.session_id(), b.session_id());
    assert_eq!(http(h, "DELETE", &format!("/api/v1/connections/{id}"), "").await.0, 404);
}

#[tokio::test]
async fn reset_over_http_and_the_guard_covers_the_new_routes() {
    let mut tk = start(Flavor::Keeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let fresh = tk.node_count();
    let c = connect(&tk).await;
    mk(&c, "/r").await.unwrap();
    tk.add_fault("delay:ms=1").unwrap();
    // A write from another origin: refused, nothing happens.
    for (method, path) in
        [("POST", "/api/v1/reset"), ("POST", "/api/v1/sessions/0x1/expire"), ("DELETE", "/api/v1/connections/1")]
    {
        let (status, _) = http_with(h, method, path, &["Origin: http://127.0.0.1:1"], "").await;
        assert_eq!(status, 403, "{method} {path}");
        let (status, _) = http_with(h, method, path, &["Sec-Fetch-Site: cross-site"], "").await;
        assert_eq!(status, 403, "{method} {path}");
    }
    let (status, _) = http_with(h, "GET", "/api/v1/sessions", &["Origin: http://evil.example"], "").await;
    assert_eq!(status, 403);
    assert!(tk.exists("/r"));
    let (status, body) = http_with(h, "POST", "/api/v1/reset", JSON, "").await;
    assert_eq!((status, json(&body)["reset"].as_bool()), (200, Some(true)), "{body}");
    assert!(!tk.exists("/r") && tk.node_count() == fresh && tk.fault_rules().is_empty());
    tk.await_sessions(0).await.unwrap();
    let c2 = connect(&tk).await;
    mk(&c2, "/r").await.unwrap();
}

#[tokio::test]
async fn json_rules_and_events_with_time_zxid_session_and_xid() {
    let mut tk = start(Flavor::Keeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let c = connect(&tk).await;
    mk(&c, "/j").await.unwrap();
    let zxid_before = within(c.exists("/j", false)).await.unwrap().expect("/j").mzxid;
    let rule = r#"{"kind":"error","code":"CONNECTIONLOSS","op":["getData"],"path":"/j","count":1}"#;
    let (status, body) = http_with(h, "POST", "/api/v1/faults", JSON, rule).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["rule"], "error:code=CONNECTIONLOSS,count=1,op=getData,path=/j");
    let (status, body) = http_with(h, "POST", "/api/v1/faults", JSON, r#"{"kind":"delay"}"#).await;
    assert_eq!(status, 400);
    assert!(json(&body)["error"].as_str().unwrap().contains("need ms="), "{body}");
    let (status, body) = http_with(h, "POST", "/api/v1/faults", JSON, "drop-everything").await;
    assert!(status == 400 && json(&body)["error"].as_str().unwrap().contains("unknown fault kind"), "{body}");

    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!(within(c.get_data("/j", false)).await.is_err());
    let (_, body) = http(h, "GET", "/api/v1/faults/events", "").await;
    let ev = &json(&body)["events"][0];
    assert_eq!(ev["session"], format!("{:#x}", c.session_id()));
    assert_eq!(ev["xid"], 3, "the getData was the session's third request");
    assert_eq!(ev["zxid"], format!("{zxid_before:#x}"));
    let t = ev["time_ms"].as_i64().unwrap();
    assert!((wall - 5_000..=wall + 5_000).contains(&t), "wall time {t} vs {wall}");
    let (_, body) = http(h, "GET", &format!("/api/v1/faults/events?since={}", ev["seq"]), "").await;
    assert_eq!(json(&body)["events"].as_array().unwrap().len(), 0, "since= skips what was seen");
}

#[tokio::test]
async fn delay_jitter_is_drawn_from_the_seed() {
    let run = |seed| async move {
        let tk = start(Flavor::Keeper, seed).await;
        tk.add_fault("delay:ms=20,jitter=15,op=exists").unwrap();
        let c = connect(&tk).await;
        for _ in 0..8 {
            within(c.exists("/", false)).await.unwrap();
        }
        tk.fault_events().iter().map(|e| e.delay_ms.unwrap()).collect::<Vec<_>>()
    };
    let a = run(5).await;
    assert_eq!(a, run(5).await, "the same seed draws the same delays");
    assert!(a.iter().all(|d| (5..=35).contains(d)) && a.iter().min() != a.iter().max(), "{a:?}");
}

#[tokio::test]
async fn blackhole_reads_and_never_answers_and_the_session_times_out() {
    let tk = start(Flavor::Zookeeper, 1).await;
    tk.add_fault("blackhole:op=getData,count=1").unwrap();
    let opts = ConnectOptions { timeout_ms: 4_000, ..ConnectOptions::default() };
    let c = within(Client::connect(tk.addr(), opts)).await.unwrap();
    mk(&c, "/b").await.unwrap();
    let lost = tokio::time::timeout(Duration::from_millis(300), c.get_data("/b", false)).await;
    assert!(lost.is_err(), "no answer: {lost:?}");
    // Nothing after it is answered either, and the connection is not closed.
    assert!(tokio::time::timeout(Duration::from_millis(200), c.exists("/b", false)).await.is_err());
    assert!(!c.is_closed());
    let ev = &tk.fault_events()[0];
    assert_eq!((ev.kind, ev.op, ev.applied), ("blackhole", "getData", false));
    // Its pings are lost too: the session expires on its timeout, then the connection closes.
    let started = Instant::now();
    within(tk.await_sessions(0)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(3_000), "expired by timeout, not at once");
}

#[tokio::test]
async fn refuse_closes_new_connections_only() {
    let tk = start(Flavor::Keeper, 1).await;
    let before = connect(&tk).await;
    tk.add_fault("refuse:count=2").unwrap();
    for _ in 0..2 {
        assert!(within(Client::connect(tk.addr(), ConnectOptions::default())).await.is_err(), "refused");
    }
    connect(&tk).await;
    within(before.exists("/", false)).await.expect("a connection made before is untouched");
    let evs = tk.fault_events();
    assert_eq!(evs.iter().map(|e| (e.kind, e.op)).collect::<Vec<_>>(), vec![("refuse", "connect"); 2]);
}
