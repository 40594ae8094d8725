//! Session and connection control, for tests in any language: list the live sessions and
//! connections, expire a session as if its timeout passed, drop a connection as a network
//! would, and reset the whole server between tests. JSON in, JSON out; errors are
//! `{"error": "..."}` with 400 (bad id) or 404 (nothing with that id).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::engine::{Engine, Shared};

/// A JSON error answer.
pub(crate) fn error(status: StatusCode, why: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": why.to_string() }))).into_response()
}

fn hex(v: i64) -> String {
    format!("{v:#x}")
}

fn sessions_json(e: &Engine) -> Vec<Value> {
    let now = e.clock.mono_ms();
    e.sessions
        .ids()
        .iter()
        .filter_map(|id| Some((id, e.sessions.get(*id)?)))
        .map(|(id, s)| {
            let peer = s.conn.and_then(|c| e.conns.get(&c)).map(|c| c.peer.to_string());
            json!({
                "id": hex(*id),
                "timeout_ms": s.timeout_ms,
                "expires_in_ms": (s.deadline_ms - now).max(0),
                "connection": s.conn,
                "peer": peer,
                "ephemerals": e.state.tree().ephemerals_of(*id).count(),
                "closing": s.closing,
            })
        })
        .collect()
}

fn connections_json(e: &Engine) -> Vec<Value> {
    let mut ids: Vec<u64> = e.conns.keys().copied().collect();
    ids.sort_unstable();
    ids.iter()
        .map(|id| {
            let c = &e.conns[id];
            json!({
                "id": id,
                "peer": c.peer.to_string(),
                "session": hex(c.session),
                "received": c.received,
                "sent": c.sent,
                "last_op": c.last_op,
                "blackholed": c.blackholed,
                "queued_bytes": c.backlog.queued(),
                "queued_peak_bytes": c.backlog.peak(),
                "reads_paused": c.backlog.pauses(),
            })
        })
        .collect()
}

/// `GET /api/v1/sessions`: `{"sessions":[{"id":"0x..","timeout_ms","expires_in_ms",
/// "connection","peer","ephemerals","closing"}...]}`, ordered by id.
pub async fn list(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let sessions = sessions_json(&shared.engine());
    Json(json!({ "sessions": sessions }))
}

/// `GET /api/v1/connections`: `{"connections":[{"id","peer","session","received","sent",
/// "last_op","blackholed","queued_bytes","queued_peak_bytes","reads_paused"}...]}`, ordered by id.
pub async fn connections(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let conns = connections_json(&shared.engine());
    Json(json!({ "connections": conns }))
}

/// `POST /api/v1/sessions/{id}/expire`: ends the session now, through the log, as its timeout
/// would (ephemerals deleted, watches fired, connection closed). `{"expired":"0x.."}`.
pub async fn expire(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let session = match crate::faults::parse_session(&id) {
        Ok(s) => s,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    if shared.engine().end_session(session) {
        Json(json!({ "expired": hex(session) })).into_response()
    } else {
        error(StatusCode::NOT_FOUND, format!("no live session {}", hex(session)))
    }
}

/// `DELETE /api/v1/connections/{id}`: closes the connection as a dropped network link would;
/// its session lives on until its timeout, so the client can reconnect (and, in zookeeper
/// flavor, resume it). 204, or 404.
pub async fn drop_connection(State(shared): State<Arc<Shared>>, Path(id): Path<u64>) -> Response {
    let mut e = shared.engine();
    if !e.conns.contains_key(&id) {
        return error(StatusCode::NOT_FOUND, format!("no connection {id}"));
    }
    tracing::info!(connection = id, "connection dropped over HTTP");
    e.conns.close(id);
    StatusCode::NO_CONTENT.into_response()
}

/// `POST /api/v1/reset`: an empty tree, no sessions, no fault rules, as `TestKeeper::reset`.
/// `{"reset":true,"znodes":N}`; 500 with the storage error when a data directory fails.
pub async fn reset(State(shared): State<Arc<Shared>>) -> Response {
    match shared.reset() {
        Ok(_) => {
            let znodes = shared.engine().state.tree().len();
            Json(json!({ "reset": true, "znodes": znodes })).into_response()
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
