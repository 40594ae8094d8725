//! The fault controls of a running testkeeper through its HTTP admin API (docs/faults.md):
//! `POST /api/v1/faults` installs a rule, `GET /api/v1/faults/events` reads what fired,
//! `DELETE /api/v1/faults/{id}` removes one rule. This lets the chaos sweep run against a
//! server in another process (`testkeeper publish --chaos --target --admin`).
//!
//! A few requests per run do not justify an HTTP client crate: this speaks HTTP/1.0 (so the
//! reply is never chunked and the connection closes after it), and bounds every request.

use std::time::Duration;

use serde_json::Value;
use testkeeper_server::faults::FaultEvent;
use testkeeper_server::http::guard::WRITE_HEADER;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One admin request, connect to last byte; the endpoint answers from memory.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The kinds and ops `check` compares against; `FaultEvent` holds `&'static str`, so names
/// read back over HTTP are mapped onto these (anything else becomes "other").
const NAMES: &[&str] = &[
    "delay",
    "drop-response",
    "drop-request",
    "error",
    "reset",
    "expire-session",
    "create",
    "setData",
    "delete",
    "multi",
    "getData",
    "getChildren",
    "exists",
];

/// A server's admin endpoint, `http://HOST:PORT`.
#[derive(Debug, Clone)]
pub struct Admin {
    authority: String,
}

impl Admin {
    /// Parses `http://HOST:PORT[/]` (the scheme may be left out).
    ///
    /// # Errors
    /// Another scheme, or a path after the authority.
    pub fn new(url: &str) -> Result<Admin, String> {
        let rest = url.strip_prefix("http://").unwrap_or(url).trim_end_matches('/');
        if rest.is_empty() || rest.contains('/') || rest.contains("://") {
            return Err(format!("admin URL must be http://HOST:PORT, got '{url}'"));
        }
        Ok(Admin { authority: rest.to_string() })
    }

    /// Installs `rule`; returns its id.
    ///
    /// # Errors
    /// Unreachable, or the server refused the rule (its parse error).
    pub async fn add_fault(&self, rule: &str) -> Result<u64, String> {
        let body = self.request("POST", "/api/v1/faults", rule).await?;
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("POST faults answered {body:?}: {e}"))?;
        v["id"].as_u64().ok_or_else(|| format!("POST faults answered without an id: {body}"))
    }

    /// Removes the rule `id`.
    ///
    /// # Errors
    /// Unreachable, or no such rule.
    pub async fn remove_fault(&self, id: u64) -> Result<(), String> {
        self.request("DELETE", &format!("/api/v1/faults/{id}"), "").await.map(drop)
    }

    /// The server's kept fault events, oldest first.
    ///
    /// # Errors
    /// Unreachable, or an answer that is not the documented JSON.
    pub async fn events(&self) -> Result<Vec<FaultEvent>, String> {
        let body = self.request("GET", "/api/v1/faults/events", "").await?;
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("GET events answered {body:?}: {e}"))?;
        let list = v["events"].as_array().ok_or_else(|| format!("GET events answered without events: {body}"))?;
        list.iter().map(|e| event_from_json(e).ok_or_else(|| format!("malformed fault event {e}"))).collect()
    }

    /// Sends one request; returns the body of a 2xx reply.
    async fn request(&self, method: &str, path: &str, body: &str) -> Result<String, String> {
        let what = format!("{method} http://{}{path}", self.authority);
        let exchange = async {
            let mut s = TcpStream::connect(&self.authority).await?;
            // The endpoint refuses writes without this header (its cross-site guard).
            let head = format!(
                "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Type: text/plain\r\n{WRITE_HEADER}: 1\r\nContent-Length: {}\r\n\r\n",
                self.authority,
                body.len()
            );
            s.write_all(head.as_bytes()).await?;
            s.write_all(body.as_bytes()).await?;
            let mut reply = Vec::new();
            s.read_to_end(&mut reply).await?;
            Ok::<_, std::io::Error>(reply)
        };
        let reply = match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Err(_) => return Err(format!("{what}: no answer within {REQUEST_TIMEOUT:?}")),
            Ok(Err(e)) => return Err(format!("{what}: {e}")),
            Ok(Ok(r)) => String::from_utf8_lossy(&r).into_owned(),
        };
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok());
        match status {
            Some(200..=299) => Ok(body.to_string()),
            _ => Err(format!("{what}: {} {}", head.lines().next().unwrap_or("no status line"), body.trim())),
        }
    }
}

fn known(name: &str) -> &'static str {
    NAMES.iter().find(|n| **n == name).copied().unwrap_or("other")
}

/// One event of `GET /api/v1/faults/events` (session as `0x...`).
fn event_from_json(e: &Value) -> Option<FaultEvent> {
    let session = e["session"].as_str()?;
    let session = u64::from_str_radix(session.trim_start_matches("0x"), 16).ok()? as i64;
    Some(FaultEvent {
        seq: e["seq"].as_u64()?,
        rule: e["rule"].as_u64()?,
        kind: known(e["kind"].as_str()?),
        op: known(e["op"].as_str()?),
        path: e["path"].as_str().map(str::to_string),
        session,
        xid: i32::try_from(e["xid"].as_i64()?).ok()?,
        applied: e["applied"].as_bool()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_and_events() {
        assert_eq!(Admin::new("http://127.0.0.1:8123/").unwrap().authority, "127.0.0.1:8123");
        assert!(Admin::new("https://x:1").is_err() && Admin::new("http://x:1/api").is_err());
        let e = serde_json::json!({"seq": 4, "rule": 2, "kind": "drop-response", "op": "setData",
            "path": "/a", "session": "0x1000000000001", "xid": 7, "applied": true});
        let got = event_from_json(&e).unwrap();
        assert_eq!((got.kind, got.op, got.session, got.xid), ("drop-response", "setData", 0x1000000000001, 7));
    }
}
