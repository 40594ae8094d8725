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

use std::ops::{Deref, DerefMut};
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
    pub fn engine(&self) -> EngineGuard<'_> {
        EngineGuard(
            self.engine
                .lock()
                .unwrap_or_else(|_| panic!("engine poisoned by an earlier invariant failure; refusing to serve")),
        )
    }
}

/// The locked engine. Releasing it flushes the frames the holder produced to their writers
/// (`Engine::flush`), so every caller, batch or not, sends what it queued.
pub struct EngineGuard<'a>(MutexGuard<'a, Engine>);

impl Deref for EngineGuard<'_> {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.0
    }
}

impl DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.0
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        // A panic inside the engine is a broken invariant: send nothing more of that state.
        if !std::thread::panicking() {
            self.0.flush();
        }
    }
}
