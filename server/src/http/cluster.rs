//! A cluster node's own controls: its status, and the divergence faults that prove the
//! fail-stop (`invalid-digest-next`: as the leader, write a wrong digest into the next entry,
//! ClickHouse's `keeper_leader_sets_invalid_digest`; `corrupt-next-apply`: apply the next
//! write entry to a corrupted copy here). A standalone server answers 404.
//!
//! | route | answer |
//! |---|---|
//! | `GET /api/v1/cluster` | `{"id":N,"role":"leader","leader":N,"term":T,"applied":I,"stopped":null}` |
//! | `POST /api/v1/cluster/faults/{kind}` | `{"node":N,"armed":"corrupt-next-apply"}`; 400 for another kind |

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::sessions::error;
use crate::engine::Shared;

/// The divergence faults a node can be armed with.
pub const FAULT_KINDS: [&str; 2] = ["invalid-digest-next", "corrupt-next-apply"];

const STANDALONE: &str = "this server is not a cluster node (serve --id/--peers, or TestKeeperCluster)";

/// `GET /api/v1/cluster`.
pub async fn status(State(shared): State<Arc<Shared>>) -> Response {
    let Some(s) = shared.engine().node_status() else { return error(StatusCode::NOT_FOUND, STANDALONE) };
    Json(json!({
        "id": s.id,
        "role": s.role.name(),
        "leader": s.leader,
        "term": s.term,
        "applied": s.applied,
        "stopped": s.stopped,
    }))
    .into_response()
}

/// `POST /api/v1/cluster/faults/{kind}`: arms one divergence fault on this node.
pub async fn arm_fault(State(shared): State<Arc<Shared>>, Path(kind): Path<String>) -> Response {
    let mut e = shared.engine();
    let Some(r) = e.replica.as_mut() else { return error(StatusCode::NOT_FOUND, STANDALONE) };
    match kind.as_str() {
        "invalid-digest-next" => r.invalid_digest_next = true,
        "corrupt-next-apply" => r.corrupt_next = true,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("unknown cluster fault '{kind}'; one of: {}", FAULT_KINDS.join(", ")),
            )
        }
    }
    Json(json!({ "node": r.link.node, "armed": kind })).into_response()
}
