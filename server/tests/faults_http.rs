//! The admin HTTP endpoint: fault control while a client runs, `/ready`, the four-letter-word
//! commands, `/metrics` as strict Prometheus text, and the cross-site guard in front of it all.

mod faults_support;

use faults_support::{connect, http, http_with, mk, start, within};
use serde_json::Value;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::ClientError;
use testkeeper_wire::ZkError;

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[tokio::test]
async fn fault_api_while_a_client_runs() {
    let mut tk = start(Flavor::Keeper, 7).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    assert_eq!(tk.http_addr(), Some(h));
    let c = connect(&tk).await;
    mk(&c, "/h").await.unwrap();

    let (status, body) = http(h, "POST", "/api/v1/faults", "error:code=-4,op=getData,path=/h").await;
    assert_eq!(status, 200, "{body}");
    let id = json(&body)["id"].as_u64().unwrap();
    assert_eq!(within(c.get_data("/h", false)).await.unwrap_err(), ClientError::Zk(ZkError::ConnectionLoss));
    within(c.exists("/h", false)).await.unwrap();

    let (status, body) = http(h, "GET", "/api/v1/faults", "").await;
    assert_eq!(status, 200);
    let list = json(&body);
    assert_eq!(list["seed"], 7);
    let rule = &list["rules"][0];
    assert_eq!(
        (rule["id"].as_u64(), rule["kind"].as_str(), rule["matched"].as_u64(), rule["fired"].as_u64()),
        (Some(id), Some("error"), Some(1), Some(1))
    );
    assert_eq!(rule["rule"], "error:code=-4,op=getData,path=/h");

    let (status, body) = http(h, "GET", "/api/v1/faults/events", "").await;
    assert_eq!(status, 200);
    let ev = &json(&body)["events"][0];
    assert_eq!(
        (ev["kind"].as_str(), ev["op"].as_str(), ev["path"].as_str(), ev["applied"].as_bool()),
        (Some("error"), Some("getData"), Some("/h"), Some(false))
    );
    assert_eq!(ev["session"], format!("{:#x}", c.session_id()));

    assert_eq!(http(h, "DELETE", &format!("/api/v1/faults/{id}"), "").await.0, 204);
    assert_eq!(http(h, "DELETE", &format!("/api/v1/faults/{id}"), "").await.0, 404);
    within(c.get_data("/h", false)).await.expect("the rule is gone");

    let (status, body) = http(h, "POST", "/api/v1/faults", "drop-response:op=creat").await;
    assert_eq!(status, 400);
    assert!(body.contains("unknown op 'creat'"), "{body}");

    http(h, "POST", "/api/v1/faults", "delay:ms=1,op=sync").await;
    http(h, "POST", "/api/v1/faults", "reset:op=sync").await;
    assert_eq!(tk.fault_rules().len(), 2);
    assert_eq!(http(h, "DELETE", "/api/v1/faults", "").await.0, 204);
    assert_eq!(json(&http(h, "GET", "/api/v1/faults", "").await.1)["rules"], Value::Array(vec![]));
    within(c.sync("/h")).await.unwrap();
    tk.shutdown().await;
}

/// A web page in the user's browser cannot install or clear rules: a foreign `Origin` is
/// refused whatever the method, a write from another origin (another port on loopback, or a
/// browser's `Sec-Fetch-Site: cross-site`) is refused, and nothing changes either way; curl
/// with no extra header, and the endpoint's own origin (the dashboard), may write.
#[tokio::test]
async fn cross_site_requests_are_refused() {
    let mut tk = start(Flavor::Keeper, 7).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let rule = "error:code=-4,op=getData";
    let evil_origin = ["Origin: http://evil.example", "X-Testkeeper: 1", "Content-Type: application/json"];
    let other_port = ["Origin: http://127.0.0.1:3000", "Content-Type: text/plain"];
    let cross_site = ["Sec-Fetch-Site: cross-site", "Content-Type: text/plain"];
    for (headers, method, path) in [
        (&evil_origin[..], "POST", "/api/v1/faults"),
        (&["Origin: null", "X-Testkeeper: 1"][..], "POST", "/api/v1/faults"),
        (&other_port[..], "POST", "/api/v1/faults"),
        (&cross_site[..], "POST", "/api/v1/faults"),
        (&["Sec-Fetch-Site: same-site"][..], "DELETE", "/api/v1/faults"),
        (&["Origin: http://evil.example"][..], "GET", "/api/v1/faults"),
        (&["Origin: http://evil.example"][..], "GET", "/api/v1/commands/ruok"),
    ] {
        let (status, body) = http_with(h, method, path, headers, rule).await;
        assert_eq!(status, 403, "{method} {path} {headers:?}: {body}");
        assert!(tk.fault_rules().is_empty(), "{method} {path} {headers:?} changed nothing");
    }
    // curl with no header at all, the endpoint's own origin, and a JSON content type pass.
    assert_eq!(http_with(h, "POST", "/api/v1/faults", &[], rule).await.0, 200);
    let own = format!("Origin: http://{h}");
    let own_site = [own.as_str(), "Sec-Fetch-Site: same-origin"];
    assert_eq!(http_with(h, "POST", "/api/v1/faults", &own_site, rule).await.0, 200);
    let (status, _) = http_with(h, "POST", "/api/v1/faults", &["Content-Type: application/json"], rule).await;
    assert_eq!(status, 200);
    assert_eq!(tk.fault_rules().len(), 3);
    assert_eq!(http_with(h, "GET", "/ready", &["Origin: http://localhost:8080"], "").await.0, 200);
    assert_eq!(http_with(h, "DELETE", "/api/v1/faults", &[], "").await.0, 204);
    assert!(tk.fault_rules().is_empty());
}

#[tokio::test]
async fn ready_and_commands() {
    let mut tk = start(Flavor::Keeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let (status, body) = http(h, "GET", "/ready", "").await;
    assert_eq!(status, 200);
    assert_eq!(json(&body), json(r#"{"status":"ok","details":{"role":"standalone","hasLeader":true}}"#));
    // Keeper's KeeperHTTPCommandsHandler: JSON, the 4lw text under "result".
    let (status, body) = http(h, "GET", "/api/v1/commands/ruok", "").await;
    assert_eq!((status, json(&body)), (200, json(r#"{"result":"imok"}"#)));
    let (status, mntr) = http(h, "GET", "/api/v1/commands/mntr", "").await;
    assert!(status == 200 && json(&mntr)["result"].as_str().is_some_and(|m| m.contains("zk_znode_count\t")), "{mntr}");
    let (status, body) = http(h, "GET", "/api/v1/commands/nope", "").await;
    assert_eq!((status, json(&body)), (400, json(r#"{"message":"Invalid four letter command."}"#)));
    // Keeper's default allow list leaves out `dump`.
    let (status, body) = http(h, "GET", "/api/v1/commands/dump", "").await;
    assert_eq!((status, json(&body)), (403, json(r#"{"message":"Command is disabled. Check server settings."}"#)));
    // The text form this route had before it followed Keeper.
    assert_eq!(http(h, "GET", "/api/v1/commands/ruok?format=text", "").await, (200, "imok".to_string()));
    assert_eq!(http(h, "GET", "/api/v1/commands/nope?format=text", "").await.0, 404);
}

/// Checks every line against the text exposition format: `# HELP`/`# TYPE` comments, or
/// `name{label="value",...} value` with a valid metric name and a float value.
fn check_exposition_format(text: &str) {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars()
                .enumerate()
                .all(|(i, ch)| ch == '_' || ch == ':' || ch.is_ascii_alphabetic() || (i > 0 && ch.is_ascii_digit()))
    };
    assert!(text.ends_with('\n'), "exposition ends with a newline");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kw, name, tail) = (parts.next().unwrap(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            assert!(kw == "HELP" || kw == "TYPE", "bad comment: {line}");
            assert!(name_ok(name), "bad name in: {line}");
            if kw == "TYPE" {
                assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&tail), "bad type: {line}");
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line}"));
        assert!(value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value), "bad value: {line}");
        let (name, labels) = series.split_once('{').map_or((series, None), |(n, l)| (n, Some(l)));
        assert!(name_ok(name), "bad metric name: {line}");
        if let Some(labels) = labels {
            let labels = labels.strip_suffix('}').unwrap_or_else(|| panic!("unclosed labels: {line}"));
            for pair in labels.split("\",").filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("bad label in: {line}"));
                assert!(name_ok(k) && !v.trim_end_matches('"').contains('"'), "bad label {pair:?} in: {line}");
            }
        }
    }
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let mut tk = start(Flavor::Keeper, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let c = connect(&tk).await;
    mk(&c, "/m").await.unwrap();
    within(c.get_data("/m", true)).await.unwrap();
    tk.fail_next("op=exists", -4).unwrap();
    let _ = within(c.exists("/m", false)).await;

    let (status, text) = http(h, "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    check_exposition_format(&text);
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parses as Prometheus text");
    let sample = |name: &str, label: Option<(&str, &str)>| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .map(|s| match &s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => *v,
                other => panic!("{name} is not a plain value: {other:?}"),
            })
            .unwrap_or_else(|| panic!("no sample {name} {label:?} in:\n{text}"))
    };
    assert_eq!(sample("testkeeper_requests_total", Some(("op", "create"))), 1.0);
    assert_eq!(sample("testkeeper_requests_total", Some(("op", "getData"))), 1.0);
    assert_eq!(sample("testkeeper_faults_fired_total", Some(("kind", "error"))), 1.0);
    assert_eq!(sample("testkeeper_faults_fired_total", Some(("kind", "reset"))), 0.0);
    assert_eq!(sample("testkeeper_sessions", None), 1.0);
    assert_eq!(sample("testkeeper_watches", None), 1.0);
    assert_eq!(sample("testkeeper_ephemerals", None), 0.0);
    assert_eq!(sample("testkeeper_znodes", None), tk.node_count() as f64);
    // The digest as two exact 32-bit gauges, never as a label (one series, whatever it holds).
    let (hi, lo) = (sample("testkeeper_tree_digest_high", None), sample("testkeeper_tree_digest_low", None));
    assert_eq!((hi as u64) << 32 | lo as u64, tk.digest());
    assert!(!text.contains(&tk.digest().to_string()), "the digest is not in a label:\n{text}");
    assert_eq!(sample("testkeeper_tree_digest_enabled", None), 1.0);
    let build = scrape.samples.iter().find(|s| s.metric == "testkeeper_build_info").expect("build info");
    assert_eq!(build.labels.get("version"), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(build.labels.get("flavor"), Some("keeper"));
    // A tap (delay:ms=0) logs but is no fault.
    tk.add_fault("delay:ms=0,op=sync").unwrap();
    within(c.sync("/m")).await.unwrap();
    let (_, text) = http(h, "GET", "/metrics", "").await;
    assert!(text.contains("testkeeper_fault_taps_total 1"), "{text}");
    assert!(text.contains("testkeeper_faults_fired_total{kind=\"delay\"} 0"), "{text}");
    let latency =
        scrape.samples.iter().find(|s| s.metric == "testkeeper_request_latency_seconds").expect("latency histogram");
    match &latency.value {
        prometheus_parse::Value::Histogram(buckets) => {
            assert_eq!(buckets.last().map(|b| b.count), Some(2.0))
        }
        other => panic!("latency is not a histogram: {other:?}"),
    }
}
