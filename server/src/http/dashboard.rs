//! The dashboard: `GET /dashboard`, one self-contained page compiled into the binary
//! (`dashboard.html`: inline CSS and JS, nothing fetched from elsewhere), and the JSON it
//! polls:
//!
//! - `GET /dashboard/content`: Keeper's own (`KeeperDashboardRequestHandler.cpp`):
//!   `ch_version`, `keeper_details` {latency_avg, role, alive_connections, node_count (the
//!   last two as strings)} and `cluster` {leader_id, self_id, has_leader,
//!   peer_health_available, http_port, members[] {server_id, endpoint, is_observer, priority,
//!   is_leader, is_self, last_log_index (a string), is_alive, is_synced, last_succ_resp_ms}};
//! - `GET /api/v1/dashboard`: testkeeper's own: the digest, counters, latency quantiles,
//!   sessions with their ephemerals and watches, and a cluster node's Raft status;
//! - `GET /api/v1/dashboard/search?q=TEXT[&limit=N]`: testkeeper's own: the paths that
//!   contain `TEXT`, sorted, at most `N` (default 100, at most 1000), and how many matched.
//!
//! The page reads the tree through Keeper's storage API and changes things through the
//! routes every script uses (storage, faults, session expiry), so it has no powers of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Extension, Query, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::engine::stats::{LatencyHistogram, LATENCY_BOUNDS_US};
use crate::engine::{Engine, Shared};
use crate::fourlw;

/// The page, as built into the binary.
pub const PAGE: &str = include_str!("dashboard.html");

/// What the HTTP endpoint knows beyond the engine: a cluster node's peers and their Raft
/// addresses (Keeper's `endpoint`), empty standalone.
#[derive(Debug, Clone, Default)]
pub struct Peers(pub BTreeMap<u64, String>);

/// `GET /dashboard`.
pub async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=UTF-8"), (header::CACHE_CONTROL, "no-store")], PAGE).into_response()
}

/// The version string `/dashboard/content` reports as `ch_version`.
pub fn version() -> String {
    format!("testkeeper-{}", env!("CARGO_PKG_VERSION"))
}

/// `GET /dashboard/content`, Keeper's JSON.
pub async fn content(State(shared): State<Arc<Shared>>, peers: Option<Extension<Peers>>, req: Request) -> Response {
    let http_port = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.rsplit_once(':'))
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .unwrap_or(0);
    let peers = peers.map(|Extension(p)| p).unwrap_or_default();
    let e = shared.engine();
    Json(content_json(&e, &peers, http_port)).into_response()
}

/// The body of `/dashboard/content`.
pub fn content_json(e: &Engine, peers: &Peers, http_port: u16) -> Value {
    let mut out = json!({ "ch_version": version() });
    let (role, has_leader, ready) = fourlw::readiness(e);
    if !ready {
        return out;
    }
    let (_, avg_ms, _) = e.stats.latency_ms();
    out["keeper_details"] = json!({
        "latency_avg": avg_ms,
        "role": role,
        "alive_connections": e.conns.len().to_string(),
        "node_count": e.state.tree().len().to_string(),
    });
    let members: Vec<Value> = match (e.node_status(), e.raft_info()) {
        (Some(s), Some(info)) => {
            let mut ids = info.members.clone();
            if ids.is_empty() {
                ids = peers.0.keys().copied().collect();
            }
            ids.iter()
                .map(|&id| {
                    let follower = info.followers.iter().find(|f| f.id == id);
                    let is_self = id == s.id;
                    let last = if is_self { Some(info.last_index) } else { follower.map(|f| f.matched) };
                    json!({
                        "server_id": id,
                        "endpoint": peers.0.get(&id).cloned().unwrap_or_default(),
                        "is_observer": false,
                        "priority": 1,
                        "is_leader": id == s.leader,
                        "is_self": is_self,
                        "last_log_index": last.map(|i| i.to_string()),
                        "is_alive": follower.map(|f| f.active),
                        "is_synced": follower.map(|f| info.last_index <= f.matched + info.stale_log_gap),
                        "last_succ_resp_ms": Value::Null,
                    })
                })
                .collect()
        }
        _ => vec![json!({
            "server_id": 1,
            "endpoint": e.cfg.listen.to_string(),
            "is_observer": false,
            "priority": 1,
            "is_leader": true,
            "is_self": true,
            "last_log_index": e.state.last_index().to_string(),
            "is_alive": Value::Null,
            "is_synced": Value::Null,
            "last_succ_resp_ms": Value::Null,
        })],
    };
    let leader_id = members.iter().find(|m| m["is_leader"] == true).map_or(0, |m| m["server_id"].as_u64().unwrap_or(0));
    let self_id = members.iter().find(|m| m["is_self"] == true).map_or(0, |m| m["server_id"].as_u64().unwrap_or(0));
    let peer_health_available = members.iter().any(|m| !m["is_alive"].is_null());
    out["cluster"] = json!({
        "leader_id": leader_id,
        "self_id": self_id,
        "has_leader": has_leader,
        "peer_health_available": peer_health_available,
        "http_port": http_port,
        "members": members,
    });
    out
}

/// The `q` quantile (0..1) of a latency histogram in µs, interpolated within its bucket and
/// clamped to the observed minimum and maximum; 0 with no observations.
pub fn quantile_us(h: &LatencyHistogram, q: f64, min_us: u64, max_us: u64) -> u64 {
    if h.count == 0 {
        return 0;
    }
    let rank = (q * h.count as f64).max(1.0);
    let mut seen = 0u64;
    for (i, &n) in h.buckets.iter().enumerate() {
        if n == 0 {
            continue;
        }
        if (seen + n) as f64 >= rank {
            let lo = if i == 0 { 0 } else { LATENCY_BOUNDS_US[i - 1] };
            let hi = LATENCY_BOUNDS_US.get(i).copied().unwrap_or(max_us).max(lo);
            let within = (rank - seen as f64) / n as f64;
            let v = lo as f64 + within * (hi - lo) as f64;
            return (v.round() as u64).clamp(min_us, max_us.max(min_us));
        }
        seen += n;
    }
    max_us
}

/// `GET /api/v1/dashboard`: testkeeper's own summary for the page.
pub async fn summary(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let e = shared.engine();
    Json(summary_json(&e))
}

/// The body of `/api/v1/dashboard`.
pub fn summary_json(e: &Engine) -> Value {
    let (role, has_leader, ready) = fourlw::readiness(e);
    let st = &e.stats;
    let h = &st.latency;
    let (min, max) = (st.min_latency_us, st.max_latency_us);
    let mut watches: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (path, session) in e.watches.entries() {
        watches.entry(session).or_default().push(path);
    }
    let now = e.clock.mono_ms();
    let sessions: Vec<Value> = e
        .sessions
        .ids()
        .iter()
        .filter_map(|id| Some((id, e.sessions.get(*id)?)))
        .map(|(id, s)| {
            let mut eph: Vec<String> = e.state.tree().ephemerals_of(*id).map(str::to_string).collect();
            eph.sort();
            let mut w = watches.remove(id).unwrap_or_default();
            w.dedup();
            json!({
                "id": format!("{id:#x}"),
                "timeout_ms": s.timeout_ms,
                "expires_in_ms": (s.deadline_ms - now).max(0),
                "peer": s.conn.and_then(|c| e.conns.get(&c)).map(|c| c.peer.to_string()),
                "closing": s.closing,
                "ephemerals": eph,
                "watches": w,
            })
        })
        .collect();
    json!({
        "version": version(),
        "flavor": e.cfg.flavor.to_string(),
        "role": role,
        "has_leader": has_leader,
        "ready": ready,
        "digest": format!("{:016x}", e.state.digest()),
        "digest_enabled": e.cfg.digest_enabled,
        "znodes": e.state.tree().len(),
        "zxid": format!("{:#x}", e.state.zxid()),
        "last_index": e.state.last_index(),
        "connections": e.conns.len(),
        "requests_total": h.count,
        "requests_by_op": st.requests_by_op,
        "latency_us": {
            "count": h.count,
            "min": if h.count == 0 { 0 } else { min },
            "max": max,
            "avg": h.sum_us.checked_div(h.count).unwrap_or(0),
            "p50": quantile_us(h, 0.50, min, max),
            "p90": quantile_us(h, 0.90, min, max),
            "p99": quantile_us(h, 0.99, min, max),
        },
        "sessions": sessions,
        "cluster": super::cluster::status_json(e),
    })
}

/// The query of `/api/v1/dashboard/search`.
#[derive(Debug, serde::Deserialize)]
pub struct Search {
    #[serde(default)]
    q: String,
    limit: Option<usize>,
}

/// Most paths one search returns.
pub const SEARCH_MAX: usize = 1000;

/// `GET /api/v1/dashboard/search?q=TEXT[&limit=N]`.
pub async fn search(State(shared): State<Arc<Shared>>, Query(s): Query<Search>) -> Json<Value> {
    let limit = s.limit.unwrap_or(100).min(SEARCH_MAX);
    let all = shared.engine().state.tree().paths();
    Json(search_json(all, &s.q, limit))
}

/// The body of a search over `paths`: matches sorted, the first `limit`, and their count.
pub fn search_json(paths: Vec<String>, q: &str, limit: usize) -> Value {
    let mut hits: Vec<String> = paths.into_iter().filter(|p| p.contains(q)).collect();
    hits.sort_unstable();
    let total = hits.len();
    hits.truncate(limit);
    json!({ "query": q, "total": total, "paths": hits })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(samples: &[u64]) -> LatencyHistogram {
        let mut s = crate::engine::stats::Stats::default();
        for &us in samples {
            s.record("get", us);
        }
        s.latency
    }

    #[test]
    fn quantiles_stay_inside_the_observed_range() {
        assert_eq!(quantile_us(&hist(&[]), 0.5, 0, 0), 0);
        let h = hist(&[30; 10]);
        assert_eq!(quantile_us(&h, 0.5, 30, 30), 30);
        let mut samples = vec![40u64; 90];
        samples.extend([20_000u64; 10]);
        let h = hist(&samples);
        let p50 = quantile_us(&h, 0.5, 40, 20_000);
        let p99 = quantile_us(&h, 0.99, 40, 20_000);
        assert!(p50 <= 50, "{p50}");
        assert!((10_000..=20_000).contains(&p99), "{p99}");
        assert!(quantile_us(&h, 1.0, 40, 20_000) <= 20_000);
    }

    #[test]
    fn search_sorts_counts_and_caps() {
        let paths = ["/b/work", "/a", "/work", "/x/y"].map(String::from).to_vec();
        let v = search_json(paths.clone(), "work", 1);
        assert_eq!(v, json!({"query": "work", "total": 2, "paths": ["/b/work"]}));
        assert_eq!(search_json(paths, "", 10)["total"], 4);
    }

    #[test]
    fn the_page_is_self_contained() {
        for external in ["http://", "https://", "//cdn", "<link ", "src=\"http"] {
            assert!(!PAGE.contains(external), "the dashboard must not fetch {external}");
        }
        assert!(PAGE.contains("<style>") && PAGE.contains("<script>"));
    }
}
