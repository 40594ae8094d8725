//! The fault API: add, list, remove rules and read the event log, over the same grammar as
//! `--fault` and `TestKeeper::add_fault`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::engine::Shared;

/// `POST /api/v1/faults`: the body is one rule. `{"id":N}`, or 400 with the parse error as
/// plain text, readable as it is in a `curl` or CI log.
pub async fn add(State(shared): State<Arc<Shared>>, body: String) -> Response {
    let added = shared.engine().faults.add(&body);
    match added {
        Ok(id) => Json(json!({ "id": id })).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    }
}

/// `GET /api/v1/faults`: the rules with their counters, and the seed that drives `prob=`.
pub async fn list(State(shared): State<Arc<Shared>>) -> Json<serde_json::Value> {
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

/// `GET /api/v1/faults/events`: the newest fired faults, oldest first, and how many ever fired.
pub async fn events(State(shared): State<Arc<Shared>>) -> Json<serde_json::Value> {
    let (events, total) = {
        let e = shared.engine();
        (e.faults.events(), e.faults.total_events())
    };
    Json(json!({ "total": total, "events": events }))
}
