//! The admin HTTP endpoint, ClickHouse Keeper's `http_control` layout plus fault control:
//!
//! | route | answer |
//! |---|---|
//! | `GET /ready` | `{"details":{"hasLeader":true,"role":"standalone"},"status":"ok"}`; 503 and `"fail"` for a cluster node without a leader |
//! | `GET /api/v1/commands/{word}` | the four-letter word's answer, `{"result": ...}` |
//! | `GET\|POST /api/v1/commands?command=...` | a keeper-client line's output, `{"result": ...}` |
//! | `GET /metrics` | Prometheus text exposition (format 0.0.4) |
//! | `POST /api/v1/faults` | body = one rule, text or JSON; `{"id":N,"rule":..}`, or 400 with the parse error |
//! | `GET /api/v1/faults` | `{"seed":S,"rules":[...]}` with match and firing counts |
//! | `DELETE /api/v1/faults` | removes every rule |
//! | `DELETE /api/v1/faults/{id}` | removes one rule; 404 if there is none |
//! | `GET /api/v1/faults/events[?since=SEQ]` | `{"total":N,"events":[...]}`, the newest fired faults |
//! | `GET /api/v1/sessions` | `{"sessions":[...]}`: the live sessions |
//! | `POST /api/v1/sessions/{id}/expire` | expires the session now; `{"expired":"0x.."}`, or 404 |
//! | `GET /api/v1/connections` | `{"connections":[...]}`: the open client connections |
//! | `DELETE /api/v1/connections/{id}` | closes the connection (its session lives on); 204, or 404 |
//! | `POST /api/v1/reset` | an empty tree, no sessions, no fault rules; `{"reset":true,...}` |
//! | `GET /api/v1/cluster` | a cluster node's id, role, leader, term, Raft indexes, followers; 404 standalone |
//! | `POST /api/v1/cluster/transfer-leadership` | `{"to":N}` (default this node): as `rqld`, for any node |
//! | `POST /api/v1/cluster/yield-leadership` | as `ydld` |
//! | `POST /api/v1/cluster/faults/{kind}` | arms `invalid-digest-next` or `corrupt-next-apply` on this node |
//! | `GET/HEAD/POST /api/v1/storage/{op}/<path>` | Keeper's storage API (`storage.rs`) |
//! | `GET /dashboard` | the dashboard page; `GET /dashboard/content`: Keeper's JSON for it |
//! | `GET /api/v1/dashboard` | testkeeper's own summary for the page (`dashboard.rs`) |
//! | `GET /api/v1/dashboard/search?q=TEXT` | the paths containing TEXT, for the page's search |
//!
//! Handlers lock the engine only to copy out what they answer with, never across an await.
//! Every route sits behind one guard (`guard.rs`): a non-loopback `Origin` is refused, and a
//! write from a browser page must come from this endpoint's own origin; curl needs no header.
//!
//! # Layout
//! - this file: the router and [`HttpServer`] (bind, serve, stop).
//! - `client`: [`client::AdminClient`], the endpoint's client (`testkeeper faults`, the publisher).
//! - `guard`: the cross-site guard in front of every route.
//! - `control`: `/ready` and the four-letter-word commands.
//! - `faults`: the fault API.
//! - `sessions`: sessions, connections and reset.
//! - `metrics`: `/metrics`.
//! - `cluster`: a cluster node's status, leadership moves, divergence faults and gauges.
//! - `storage`: Keeper's storage API.
//! - `dashboard`: the dashboard page and its JSON.

pub mod client;
mod cluster;
mod control;
pub mod dashboard;
pub(crate) mod faults;
pub mod guard;
mod metrics;
mod sessions;
pub mod storage;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::middleware;
use axum::routing::{any, delete, get, post};
use axum::Extension;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::engine::Shared;

/// How long a stopping server waits for in-flight requests before it aborts them.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The routes, over the server's shared state, all behind [`guard::guard`].
pub fn router(shared: Arc<Shared>) -> Router {
    router_with(shared, dashboard::Peers::default())
}

/// [`router`] for a cluster node that knows its peers' Raft addresses (`/dashboard/content`).
pub fn router_with(shared: Arc<Shared>, peers: dashboard::Peers) -> Router {
    Router::new()
        .route("/ready", get(control::ready))
        .route("/api/v1/commands", get(control::run_line).post(control::run_line))
        .route("/api/v1/commands/{word}", get(control::command))
        .route("/metrics", get(metrics::metrics))
        .route("/api/v1/faults", get(faults::list).post(faults::add).delete(faults::clear))
        .route("/api/v1/faults/events", get(faults::events))
        .route("/api/v1/faults/{id}", delete(faults::remove))
        .route("/api/v1/sessions", get(sessions::list))
        .route("/api/v1/sessions/{id}/expire", post(sessions::expire))
        .route("/api/v1/connections", get(sessions::connections))
        .route("/api/v1/connections/{id}", delete(sessions::drop_connection))
        .route("/api/v1/reset", post(sessions::reset))
        .route("/api/v1/cluster", get(cluster::status))
        .route("/api/v1/cluster/transfer-leadership", post(cluster::transfer))
        .route("/api/v1/cluster/yield-leadership", post(cluster::yield_leadership))
        .route("/api/v1/cluster/faults/{kind}", post(cluster::arm_fault))
        .route(storage::PREFIX, any(storage::storage))
        .route(&format!("{}/", storage::PREFIX), any(storage::storage))
        .route(&format!("{}/{{*rest}}", storage::PREFIX), any(storage::storage))
        .route("/dashboard", get(dashboard::page))
        .route("/dashboard/content", get(dashboard::content))
        .route("/api/v1/dashboard", get(dashboard::summary))
        .route("/api/v1/dashboard/search", get(dashboard::search))
        .with_state(shared)
        .layer(Extension(peers))
        // Last, so it wraps every route above (add new routes above this line) and the
        // fallback: nothing reaches a handler unguarded.
        .layer(middleware::from_fn(guard::guard))
}

/// A running HTTP endpoint.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port) and starts serving.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start(addr: SocketAddr, shared: Arc<Shared>) -> io::Result<HttpServer> {
        HttpServer::start_with(addr, shared, dashboard::Peers::default()).await
    }

    /// [`HttpServer::start`] for a cluster node, naming its peers' Raft addresses.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start_with(addr: SocketAddr, shared: Arc<Shared>, peers: dashboard::Peers) -> io::Result<HttpServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, mut rx) = watch::channel(false);
        let app = router_with(shared, peers);
        let task = tokio::spawn(async move {
            // Stops when told, or when the sender is dropped with the `TestKeeper`.
            let shutdown = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
                warn!(error = %e, "http endpoint failed");
            }
        });
        Ok(HttpServer { addr, stop, task })
    }

    /// The bound address (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets in-flight requests finish for a moment, then ends.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(STOP_GRACE, &mut self.task).await.is_err() {
            self.task.abort();
        }
    }
}
