//! A cluster node's own controls over HTTP: its status (role, term, Raft log, the leader's
//! view of its followers), leadership moves (`rqld`/`ydld` as routes), the divergence faults
//! that prove the fail-stop (`invalid-digest-next`: as the leader, write a wrong digest into
//! the next entry, ClickHouse's `keeper_leader_sets_invalid_digest`; `corrupt-next-apply`:
//! apply the next write entry to a corrupted copy here), and its `/metrics` gauges. A
//! standalone server answers these routes with 404.
//!
//! | route | answer |
//! |---|---|
//! | `GET /api/v1/cluster` | `{"id":N,"role":"leader","leader":N,"term":T,"applied":I,"commit":C,...,"followers":[...]}` |
//! | `POST /api/v1/cluster/transfer-leadership` | body `{"to":N}` (default: this node); `{"sent":true,"to":N}`, 409 without a leader |
//! | `POST /api/v1/cluster/yield-leadership` | as `ydld`: the leader hands over to its most up-to-date follower |
//! | `POST /api/v1/cluster/faults/{kind}` | `{"node":N,"armed":"corrupt-next-apply"}`; 400 for another kind |

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;
use serde_json::{json, Value};

use super::sessions::error;
use crate::cluster::Role;
use crate::engine::{Engine, Shared};
use crate::fourlw;

/// The divergence faults a node can be armed with.
pub const FAULT_KINDS: [&str; 2] = ["invalid-digest-next", "corrupt-next-apply"];

const STANDALONE: &str = "this server is not a cluster node (serve --id/--peers, or TestKeeperCluster)";

/// A node's status as JSON (`None` standalone).
pub fn status_json(e: &Engine) -> Option<Value> {
    let s = e.node_status()?;
    let i = e.raft_info()?;
    let followers: Vec<Value> = (i.followers.iter())
        .map(|f| json!({"id": f.id, "matched": f.matched, "active": f.active, "replicating": f.replicating}))
        .collect();
    Some(json!({
        "id": s.id,
        "role": s.role.name(),
        "leader": s.leader,
        "term": s.term,
        "applied": s.applied,
        "commit": i.commit,
        "leader_commit": i.leader_commit,
        "first_index": i.first_index,
        "last_index": i.last_index,
        "last_term": i.last_term,
        "snapshot_index": i.snapshot_index,
        "applied_on_stored": i.applied_on_stored,
        "followers": followers,
        "stopped": s.stopped,
    }))
}

/// `GET /api/v1/cluster`.
pub async fn status(State(shared): State<Arc<Shared>>) -> Response {
    match status_json(&shared.engine()) {
        Some(v) => Json(v).into_response(),
        None => error(StatusCode::NOT_FOUND, STANDALONE),
    }
}

/// `POST /api/v1/cluster/transfer-leadership`, body `{"to":N}` or empty for this node.
pub async fn transfer(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let to = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        match serde_json::from_slice::<Value>(&body).ok().and_then(|v| v.get("to").map(Value::as_u64)) {
            Some(Some(n)) => Some(n),
            _ => return error(StatusCode::BAD_REQUEST, "the body must be {\"to\": NODE_ID} (or empty: this node)"),
        }
    };
    let e = shared.engine();
    let Some(r) = e.seq.replica() else { return error(StatusCode::NOT_FOUND, STANDALONE) };
    let to = to.unwrap_or(r.link.node);
    let members = r.board.info().members;
    if !members.contains(&to) {
        return error(StatusCode::BAD_REQUEST, format!("node {to} is not a member {members:?}"));
    }
    if r.leader == 0 || e.stop_reason.is_some() {
        return error(StatusCode::CONFLICT, "no leader is known to send the request to");
    }
    r.link.transfer_leader(to);
    Json(json!({"sent": true, "to": to})).into_response()
}

/// `POST /api/v1/cluster/yield-leadership`: as `ydld` (only a leader acts on it).
pub async fn yield_leadership(State(shared): State<Arc<Shared>>) -> Response {
    let e = shared.engine();
    let Some(r) = e.seq.replica() else { return error(StatusCode::NOT_FOUND, STANDALONE) };
    let leads = r.role == Role::Leader;
    fourlw::yield_leadership(&e);
    Json(json!({"sent": true, "leader": leads})).into_response()
}

/// `POST /api/v1/cluster/faults/{kind}`: arms one divergence fault on this node.
pub async fn arm_fault(State(shared): State<Arc<Shared>>, Path(kind): Path<String>) -> Response {
    let mut e = shared.engine();
    let Some(r) = e.seq.replica_mut() else { return error(StatusCode::NOT_FOUND, STANDALONE) };
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

type Labels = Vec<(String, String)>;

/// `/metrics`' cluster gauges: the role (one series per role, 1 for the current one), and on a
/// cluster node its term, leader, Raft indexes, followers and whether it stopped.
pub fn register_metrics(e: &Engine, r: &mut Registry) {
    let g = |v: u64| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    let roles = Family::<Labels, Gauge>::default();
    let current = match e.seq.replica().map(|r| r.role) {
        None => "standalone",
        Some(role) => role.name(),
    };
    let all: &[&str] = if e.seq.is_raft() { &["leader", "follower", "candidate"] } else { &["standalone"] };
    for role in all {
        roles.get_or_create(&vec![("role".into(), (*role).into())]).set(i64::from(*role == current));
    }
    r.register("raft_role", "This server's role: 1 for the current one, 0 for the others", roles);
    let (Some(s), Some(i)) = (e.node_status(), e.raft_info()) else { return };
    r.register("raft_node_id", "This node's id", g(s.id));
    r.register("raft_term", "The current Raft term", g(s.term));
    r.register("raft_leader", "The leader this node knows (0: none)", g(s.leader));
    r.register("raft_commit_index", "The commit index this node knows", g(i.commit));
    r.register("raft_applied_index", "Index of the last entry applied here", g(s.applied));
    r.register("raft_last_index", "Index of the last entry in this node's Raft log", g(i.last_index));
    r.register("raft_stopped", "1 once this node stopped serving on a divergence", g(u64::from(s.stopped.is_some())));
    if s.role == Role::Leader {
        r.register("raft_followers", "The leader's followers", g(i.followers.len() as u64));
        r.register(
            "raft_synced_followers",
            "Followers within stale_log_gap of the leader's last index",
            g(i.synced_by_gap() as u64),
        );
    }
}
