//! The fault API: add, list, remove rules and read the event log, over the same grammar as
//! `--fault` and `TestKeeper::add_fault`. A rule comes as text (`delay:ms=200,op=getData`) or,
//! with `Content-Type: application/json`, as JSON: `{"rule": "delay:ms=200"}` or the rule's
//! parts, `{"kind": "delay", "ms": 200, "op": ["getData", "exists"], "count": 1}`, turned into
//! the same text and parsed by the same parser, so both say the same things wrong.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::sessions::error;
use crate::engine::Shared;

/// Whether the request declares a JSON body.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")))
}

/// Why a JSON body is not a fault rule; each names the field (`what` quotes the JSON given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonRuleError {
    #[error("expected a JSON object such as {{\"kind\":\"delay\",\"ms\":100}}, got {0}")]
    NotAnObject(String),
    #[error("give either \"rule\" (the text grammar) or \"kind\" with its keys, not both")]
    RuleAndKind,
    #[error("\"rule\" must be a string, got {0}")]
    RuleNotAString(String),
    #[error("\"kind\" must be a string, got {0}")]
    KindNotAString(String),
    #[error("a JSON rule needs \"kind\" (or \"rule\" with the text grammar)")]
    NoKind,
    #[error("\"op\" lists op names, got {0}")]
    OpNotAName(String),
    #[error("\"{key}\" must be a string or a number, got {what}")]
    BadValue { key: String, what: String },
    #[error("\"{key}\": '{text}' holds a comma")]
    Comma { key: String, text: String },
}

/// A JSON rule as the text grammar: `{"rule": TEXT}`, or `{"kind": K, key: value...}` where a
/// value is a string, a number, or (for `op`) a list of op names.
///
/// # Errors
/// What is not a rule, naming the field.
pub fn rule_from_json(v: &Value) -> Result<String, JsonRuleError> {
    let Some(obj) = v.as_object() else {
        return Err(JsonRuleError::NotAnObject(v.to_string()));
    };
    if let Some(rule) = obj.get("rule") {
        if obj.len() > 1 {
            return Err(JsonRuleError::RuleAndKind);
        }
        return rule.as_str().map(str::to_string).ok_or_else(|| JsonRuleError::RuleNotAString(rule.to_string()));
    }
    let kind = match obj.get("kind") {
        Some(Value::String(k)) => k.clone(),
        Some(other) => return Err(JsonRuleError::KindNotAString(other.to_string())),
        None => return Err(JsonRuleError::NoKind),
    };
    let mut params = Vec::new();
    for (key, value) in obj.iter().filter(|(k, _)| *k != "kind") {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Array(items) if key == "op" => items
                .iter()
                .map(|i| i.as_str().map(str::to_string).ok_or_else(|| JsonRuleError::OpNotAName(i.to_string())))
                .collect::<Result<Vec<_>, _>>()?
                .join("|"),
            other => return Err(JsonRuleError::BadValue { key: key.clone(), what: other.to_string() }),
        };
        if text.contains(',') && key != "path" {
            return Err(JsonRuleError::Comma { key: key.clone(), text });
        }
        params.push(format!("{key}={text}"));
    }
    Ok(if params.is_empty() { kind } else { format!("{kind}:{}", params.join(",")) })
}

/// `POST /api/v1/faults`: one rule, as text or JSON (an object, or a JSON string holding the
/// text). `{"id":N,"rule":TEXT}`, or 400 with the
/// parse error: as plain text for a text body (readable as it is in a `curl` or CI log), as
/// `{"error":...}` for a JSON one.
pub async fn add(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let json = is_json(&headers);
    // A body declared JSON that is not JSON is read as the text grammar (a JSON content type
    // is one way past the cross-site guard), and its error still comes back as JSON.
    let text = match serde_json::from_str::<Value>(&body) {
        Ok(v) if json => match v {
            Value::String(t) => t,
            v => match rule_from_json(&v) {
                Ok(t) => t,
                Err(e) => return error(StatusCode::BAD_REQUEST, e),
            },
        },
        _ => body.trim().to_string(),
    };
    let added = shared.engine().faults.add(&text);
    match added {
        Ok(id) => {
            tracing::info!(id, rule = %text, "fault rule installed over HTTP");
            Json(json!({ "id": id, "rule": text })).into_response()
        }
        Err(e) if json => error(StatusCode::BAD_REQUEST, e),
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    }
}

/// `GET /api/v1/faults`: the rules with their counters, and the seed that drives `prob=`.
pub async fn list(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let rules = shared.engine().faults.rules();
    Json(json!({ "seed": shared.cfg.seed, "rules": rules }))
}

/// `DELETE /api/v1/faults`: removes every rule.
pub async fn clear(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.engine().faults.clear();
    StatusCode::NO_CONTENT
}

/// `DELETE /api/v1/faults/{id}`: removes one rule, 404 if there is none.
pub async fn remove(State(shared): State<Arc<Shared>>, Path(id): Path<u64>) -> Response {
    if shared.engine().faults.remove(id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        (StatusCode::NOT_FOUND, format!("no fault rule with id {id}\n")).into_response()
    }
}

/// The query of the events route.
#[derive(Debug, Deserialize)]
pub struct Since {
    /// Only events with a larger sequence number.
    since: Option<u64>,
}

/// `GET /api/v1/faults/events[?since=SEQ]`: the newest fired faults, oldest first (after
/// `since` when given, to follow the log), and how many ever fired.
pub async fn events(State(shared): State<Arc<Shared>>, Query(q): Query<Since>) -> Json<Value> {
    let (mut events, total) = {
        let e = shared.engine();
        (e.faults.events(), e.faults.total_events())
    };
    if let Some(s) = q.since {
        events.retain(|e| e.seq > s);
    }
    Json(json!({ "total": total, "events": events }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rules_become_the_text_grammar() {
        let r = |v: Value| rule_from_json(&v);
        assert_eq!(r(json!({"rule": "reset:count=1"})).unwrap(), "reset:count=1");
        assert_eq!(r(json!({"kind": "blackhole"})).unwrap(), "blackhole");
        let t = r(json!({"kind": "delay", "ms": 200, "jitter": 50, "op": ["getData", "exists"]})).unwrap();
        assert_eq!(t, "delay:jitter=50,ms=200,op=getData|exists");
        assert_eq!(
            r(json!({"kind": "error", "code": "CONNECTIONLOSS", "path": "/a/{b,c}"})).unwrap(),
            "error:code=CONNECTIONLOSS,path=/a/{b,c}"
        );
        assert_eq!(r(json!(["x"])), Err(JsonRuleError::NotAnObject("[\"x\"]".into())));
        assert!(r(json!(["x"])).unwrap_err().to_string().contains("expected a JSON object"));
        assert_eq!(r(json!({"ms": 1})), Err(JsonRuleError::NoKind));
        assert!(r(json!({"ms": 1})).unwrap_err().to_string().contains("needs \"kind\""));
        let bad = JsonRuleError::BadValue { key: "ms".into(), what: "true".into() };
        assert_eq!(r(json!({"kind": "delay", "ms": true})), Err(bad.clone()));
        assert!(bad.to_string().contains("\"ms\" must be"));
        assert_eq!(r(json!({"rule": "x", "kind": "y"})), Err(JsonRuleError::RuleAndKind));
        assert!(r(json!({"kind": "delay", "op": "a,b"})).unwrap_err().to_string().contains("comma"));
    }
}
