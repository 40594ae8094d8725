//! The fault controls of a running testkeeper through its HTTP admin API (docs/faults.md):
//! `POST /api/v1/faults` installs a rule, `GET /api/v1/faults/events` reads what fired,
//! `DELETE /api/v1/faults/{id}` removes one rule. This lets the chaos sweep run against a
//! server in another process (`testkeeper publish --chaos --target --admin`).
//!
//! The HTTP itself is `testkeeper_server::http::client`.

use serde_json::Value;
use testkeeper_server::faults::FaultEvent;
use testkeeper_server::http::client::{AdminClient, AdminError, AdminUrlError};

/// Why a fault control over HTTP failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlError {
    /// Nothing answered, or the endpoint answered with an error status (a refused rule's
    /// status and parse error among them).
    Request(AdminError),
    /// A 2xx answer that is not the documented JSON: what was asked, what is wrong, the body.
    Answer { what: &'static str, why: String, body: String },
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::Request(e) => e.fmt(f),
            ControlError::Answer { what, why, body } => write!(f, "{what} answered {body:?}: {why}"),
        }
    }
}

impl std::error::Error for ControlError {}

/// A server's admin endpoint, `http://HOST:PORT`.
#[derive(Debug, Clone)]
pub struct Admin {
    client: AdminClient,
}

impl Admin {
    /// Parses `http://HOST:PORT[/]` (the scheme may be left out).
    ///
    /// # Errors
    /// Another scheme, or a path after the authority.
    pub fn new(url: &str) -> Result<Admin, AdminUrlError> {
        Ok(Admin { client: AdminClient::new(url)? })
    }

    /// Installs `rule`; returns its id.
    ///
    /// # Errors
    /// Unreachable, or the server refused the rule (its parse error).
    pub async fn add_fault(&self, rule: &str) -> Result<u64, ControlError> {
        const WHAT: &str = "POST /api/v1/faults";
        let body = self.request("POST", "/api/v1/faults", rule).await?;
        let v: Value = serde_json::from_str(&body).map_err(|e| answer(WHAT, e.to_string(), &body))?;
        v["id"].as_u64().ok_or_else(|| answer(WHAT, "no id".into(), &body))
    }

    /// Removes the rule `id`.
    ///
    /// # Errors
    /// Unreachable, or no such rule.
    pub async fn remove_fault(&self, id: u64) -> Result<(), ControlError> {
        self.request("DELETE", &format!("/api/v1/faults/{id}"), "").await.map(drop)
    }

    /// The server's kept fault events, oldest first.
    ///
    /// # Errors
    /// Unreachable, or an answer that is not the documented JSON.
    pub async fn events(&self) -> Result<Vec<FaultEvent>, ControlError> {
        const WHAT: &str = "GET /api/v1/faults/events";
        let body = self.request("GET", "/api/v1/faults/events", "").await?;
        let v: Value = serde_json::from_str(&body).map_err(|e| answer(WHAT, e.to_string(), &body))?;
        let list = v["events"].as_array().ok_or_else(|| answer(WHAT, "no events".into(), &body))?;
        list.iter()
            .map(|e| event_from_json(e).ok_or_else(|| answer(WHAT, format!("malformed event {e}"), &body)))
            .collect()
    }

    /// Sends one request; returns the body of a 2xx reply.
    async fn request(&self, method: &str, path: &str, body: &str) -> Result<String, ControlError> {
        self.client.request(method, path, "text/plain", body).await.map_err(ControlError::Request)
    }
}

fn answer(what: &'static str, why: String, body: &str) -> ControlError {
    ControlError::Answer { what, why, body: body.to_string() }
}

/// `FaultEvent` holds `&'static str`: a kind or op name read back over HTTP is mapped onto the
/// server's own tables of them (anything else becomes "other").
fn known(name: &str) -> &'static str {
    let kinds = testkeeper_server::faults::Kind::ALL.into_iter().map(|k| k.name());
    let ops = testkeeper_wire::OpCode::ALL.iter().map(|op| op.name());
    kinds.chain(ops).find(|n| *n == name).unwrap_or("other")
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
        time_ms: e["time_ms"].as_i64().unwrap_or(0),
        zxid: e["zxid"].as_str().and_then(|z| u64::from_str_radix(z.trim_start_matches("0x"), 16).ok()).unwrap_or(0)
            as i64,
        delay_ms: e["delay_ms"].as_u64(),
        tap: e["tap"].as_bool().unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_and_events() {
        assert_eq!(Admin::new("http://127.0.0.1:8123/").unwrap().client.authority(), "127.0.0.1:8123");
        assert!(Admin::new("https://x:1").is_err() && Admin::new("http://x:1/api").is_err());
        let e = serde_json::json!({"seq": 4, "rule": 2, "kind": "drop-response", "op": "setData",
            "path": "/a", "session": "0x1000000000001", "xid": 7, "applied": true});
        let got = event_from_json(&e).unwrap();
        assert_eq!((got.kind, got.op, got.session, got.xid), ("drop-response", "setData", 0x1000000000001, 7));
    }
}
