//! The accept loop.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{info, warn};

use super::conn;
use crate::engine::Shared;

/// Accepts connections until `shutdown` turns true; each runs in its own task and is told to
/// stop through the same signal.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let shared = shared.clone();
                    let stop = shutdown.clone();
                    tokio::spawn(async move { conn::run(stream, peer, shared, stop).await });
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly rather than spin.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => {
                info!("listener stopping");
                return;
            }
        }
    }
}
