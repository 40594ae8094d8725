//! `/ready` and `/api/v1/commands/{word}`, as ClickHouse Keeper's `http_control` serves them,
//! so health checks and tooling written for Keeper work unchanged.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::engine::Shared;
use crate::fourlw;

/// `GET /ready`, Keeper's readiness answer: ok (200) for a leader, a follower that knows its
/// leader, or a standalone server (its own leader); fail (503) otherwise
/// (`KeeperReadinessHandler.cpp`).
pub async fn ready(State(shared): State<Arc<Shared>>) -> Response {
    let (role, has_leader, ok) = fourlw::readiness(&shared.engine());
    let body = json!({"details": {"role": role, "hasLeader": has_leader}, "status": if ok { "ok" } else { "fail" }});
    let code = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(body)).into_response()
}

/// `GET /api/v1/commands/{word}`: the four-letter word's answer, the same text the TCP port
/// gives; 404 for a word the flavor does not know, 403 for one the allow list leaves out.
pub async fn command(State(shared): State<Arc<Shared>>, Path(word): Path<String>) -> Response {
    if !fourlw::is_known(shared.cfg.flavor, &word) {
        return (StatusCode::NOT_FOUND, format!("unknown command '{word}'\n")).into_response();
    }
    match fourlw::answer(&shared, &word, None) {
        Some(text) => text.into_response(),
        None => (StatusCode::FORBIDDEN, format!("command '{word}' is not in the four-letter-word allow list\n"))
            .into_response(),
    }
}
