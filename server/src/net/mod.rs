//! The network shell: a listener that accepts connections, and one task pair per connection
//! (a reader that frames, decodes and hands requests to the engine; a writer that drains the
//! connection's outgoing queue). A bad frame closes only its own connection.
//!
//! # Layout
//! - `listener`: accept loop and server-wide shutdown.
//! - `conn`: one connection: four-letter words, handshake, request loop.
//! - `writer`: the outgoing half, batching queued frames into few writes.

pub mod conn;
pub mod listener;
mod writer;

use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::ServerConfig;
use crate::engine::Engine;

/// What every connection task shares.
pub struct Shared {
    pub cfg: Arc<ServerConfig>,
    engine: Mutex<Engine>,
}

impl Shared {
    /// Wraps an engine.
    pub fn new(cfg: Arc<ServerConfig>, engine: Engine) -> Shared {
        Shared { cfg, engine: Mutex::new(engine) }
    }

    /// Locks the engine. A panic inside the engine is a broken invariant: the poison is not
    /// cleared, so every later request fails loudly instead of serving a diverged tree.
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine
            .lock()
            .unwrap_or_else(|_| panic!("engine poisoned by an earlier invariant failure; refusing to serve"))
    }
}
