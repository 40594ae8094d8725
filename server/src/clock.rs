//! The server's clock: wall time for production, a manual clock that tests advance, the
//! runtime's (paused) clock in a simulation. The core
//! never reads it; the engine reads it once per entry and writes the value into the entry.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of "now" in ms since the epoch.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    /// The system's wall clock.
    #[default]
    System,
    /// A clock that moves only when told (shared by clones).
    Manual(Arc<AtomicI64>),
    /// The tokio runtime's clock from a fixed start: under `testkeeper sim`'s paused clock it
    /// is simulated time, the same in every replay of a seed.
    Runtime { start_ms: i64, origin: tokio::time::Instant },
}

impl Clock {
    /// A manual clock starting at `start_ms`.
    pub fn manual(start_ms: i64) -> Clock {
        Clock::Manual(Arc::new(AtomicI64::new(start_ms)))
    }

    /// The runtime's clock, reading `start_ms` now.
    pub fn runtime(start_ms: i64) -> Clock {
        Clock::Runtime { start_ms, origin: tokio::time::Instant::now() }
    }

    /// Now, in ms since the epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64),
            Clock::Manual(t) => t.load(Ordering::SeqCst),
            Clock::Runtime { start_ms, origin } => start_ms + origin.elapsed().as_millis() as i64,
        }
    }

    /// Moves a manual clock forward; no effect on the system clock.
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.fetch_add(ms, Ordering::SeqCst);
        }
    }
}
