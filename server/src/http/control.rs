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

/// `GET /ready`: a standalone server always has its leader (itself).
pub async fn ready() -> Json<serde_json::Value> {
    Json(json!({"status": "ok", "details": {"role": "standalone", "hasLeader": true}}))
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
