//! The network shell: a listener that accepts connections, and one task pair per connection
//! (a reader that frames, decodes and hands requests to the engine; a writer that drains the
//! connection's outgoing queue). A bad frame closes only its own connection. The engine is
//! reached through `engine::Shared`.
//!
//! # Layout
//! - `listener`: accept loop (limits, backoff when accept fails) and server-wide shutdown.
//! - `admission`: open connections in total and per client IP.
//! - `opening`: the handshake deadline and the session-less idle bound.
//! - `conn`: one connection: four-letter words, handshake, request loop (backpressure).
//! - `writer`: the outgoing half, batching queued frames into few writes.

pub mod admission;
pub mod conn;
pub mod listener;
pub mod opening;
mod writer;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::engine::Shared;

/// Serves `listener` with the engine behind `shared`, and ticks it (expiry, collection,
/// snapshots), until `stop` turns true.
pub fn serve(
    listener: impl Into<listener::Listener>,
    shared: &Arc<Shared>,
    stop: &watch::Sender<bool>,
) -> Vec<JoinHandle<()>> {
    let accept = tokio::spawn(listener::serve(listener.into(), shared.clone(), stop.subscribe()));
    let ticker = shared.clone();
    let mut rx = stop.subscribe();
    let tick = Duration::from_millis(shared.cfg.tick_ms.max(1));
    let tick = tokio::spawn(async move {
        let mut interval = tokio::time::interval(tick);
        loop {
            tokio::select! {
                // In order, never at random: a seeded simulation must replay (docs/sim.md).
                biased;
                _ = interval.tick() => ticker.engine().tick(),
                _ = rx.changed() => return,
            }
        }
    });
    vec![accept, tick]
}
