//! What `serve` logs: at debug one line per request (session, xid, op, path, error, zxid,
//! latency), at info one per session opened, closed or expired; no colour codes on a pipe;
//! `--log-format json` one JSON object per line.

mod support;

use support::Served;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

fn session_traffic(addr: &str, close: bool) -> i64 {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = Client::connect(addr.parse().unwrap(), ConnectOptions::default()).await.unwrap();
        c.create("/logged", b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
        assert!(c.get_data("/missing", false).await.is_err());
        let id = c.session_id();
        if close {
            let _ = c.close().await;
        }
        id
    })
}

#[test]
fn debug_logs_every_request_and_info_every_session_without_colour() {
    let s = Served::start(&["--flavor", "zookeeper"], &[("RUST_LOG", "debug")]);
    let id = format!("{:#x}", session_traffic(&s.addr, true));
    s.await_log(&["session opened", &id, "timeout_ms=", "peer=127.0.0.1:"]);
    let create = s.await_log(&["request", &format!("session={id}"), "xid=1", "op=create", "path=/logged", "err=ok"]);
    assert!(create.contains("zxid=0x") && create.contains("latency_us="), "{create}");
    s.await_log(&["request", "op=getData", "path=/missing", "err=NONODE"]);
    s.await_log(&["session closed", &id]);
    let log = s.log().join("\n");
    assert!(!log.contains('\u{1b}'), "no ANSI escapes when stderr is not a terminal:\n{log}");
}

#[test]
fn json_log_format_for_ci() {
    let s = Served::start(&["--log-format", "json"], &[("RUST_LOG", "info")]);
    let id = format!("{:#x}", session_traffic(&s.addr, false));
    s.await_log(&["session opened", &id]);
    for line in s.log().iter().filter(|l| !l.starts_with("testkeeper http listening on")) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string() && v["fields"]["message"].is_string(), "{line}");
    }
}
