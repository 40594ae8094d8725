//! `/api/v1/commands?command=`: keeper-client's language over Keeper's HTTP API, in both
//! flavors, answered as `testkeeper client -q` answers the same line.

mod faults_support;
#[allow(dead_code)] // each test binary uses part of it
mod http_support;

use faults_support::{connect, start};
use http_support::{get, req};
use testkeeper_server::core::flavor::Flavor;

/// `/api/v1/commands?command=` runs keeper-client's language on this server, in both flavors:
/// the output of `testkeeper client -q` for the same line, under "result".
async fn commands_line(flavor: Flavor) {
    let mut tk = start(flavor, 1).await;
    let h = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let q = |line: &str| format!("/api/v1/commands?command={}", urlencode(line));
    let a = get(h, &q("create /shell 'a b'; create /shell/x 1; ls /shell; get /shell; exists /nope")).await;
    assert_eq!((a.status, a.content_type.as_str()), (200, "application/json"), "{a:?}");
    assert_eq!(a.json()["result"], "x\na b\n0\n", "{flavor:?}");
    let a = get(h, &format!("{}&cwd=/shell", q("ls; get x; get_direct_children_number"))).await;
    assert_eq!(a.json()["result"], "x\n1\n1\n", "{flavor:?}: relative to cwd");
    let a = get(h, &q("ruok")).await;
    assert_eq!(a.json()["result"], "imok\n");
    // A failing statement stops the line: what ran before is kept, the error is keeper-client's.
    let a = get(h, &q("get /shell; get /missing; ls /")).await;
    assert_eq!(a.status, 400, "{a:?}");
    let v = a.json();
    assert_eq!(
        (v["result"].as_str(), v["message"].as_str()),
        (Some("a b\n"), Some("Coordination error: No node, path /missing"))
    );
    let a = get(h, &q("bogus /x")).await;
    assert_eq!(a.status, 400);
    assert!(a.json()["message"].as_str().unwrap().contains("unknown command 'bogus'"), "{a:?}");
    assert_eq!(get(h, "/api/v1/commands").await.status, 400, "no command");
    // A line that writes, from a page of another site, is refused; a read is not.
    let foreign = ["Sec-Fetch-Site: cross-site"];
    assert_eq!(req(h, "GET", &q("create /from_a_page x"), &foreign, b"").await.status, 403);
    let zk = connect(&tk).await;
    assert!(zk.exists("/from_a_page", false).await.unwrap().is_none());
    let _ = zk.close().await;
}

/// Percent-encodes a query value (only what the lines above need).
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn a_keeper_client_line_over_http_keeper_flavor() {
    commands_line(Flavor::Keeper).await;
}

#[tokio::test]
async fn a_keeper_client_line_over_http_zookeeper_flavor() {
    commands_line(Flavor::Zookeeper).await;
}
