//! The server's clock: wall time for production, a manual clock that tests advance, the
//! runtime's (paused) clock in a simulation. The core never reads it; the engine reads it once
//! per entry and writes the value into the entry.
//!
//! Two readings: `now_ms`, the wall clock, for what is written into entries (ctime, mtime, a
//! TTL node's age); and `mono_ms`, a monotonic clock, for how long a session has been silent.
//! A wall clock can be stepped (NTP, a resumed VM): timed on it, a step forward of more than
//! a session timeout expired every session at the next tick. ZooKeeper times sessions on
//! `Time.currentElapsedTime()` (`System.nanoTime`) in `ExpiryQueue` for the same reason.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
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
    /// is simulated time, the same in every replay of a seed. `skew` is how far this node's
    /// wall clock was stepped (`jump`); the monotonic reading ignores it.
    Runtime { start_ms: i64, origin: tokio::time::Instant, skew: Arc<AtomicI64> },
}

/// The origin of `Clock::System`'s monotonic reading: the first time anything asked.
fn process_start() -> std::time::Instant {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    *START.get_or_init(std::time::Instant::now)
}

impl Clock {
    /// A manual clock starting at `start_ms`.
    pub fn manual(start_ms: i64) -> Clock {
        Clock::Manual(Arc::new(AtomicI64::new(start_ms)))
    }

    /// The runtime's clock, reading `start_ms` now.
    pub fn runtime(start_ms: i64) -> Clock {
        Clock::Runtime { start_ms, origin: tokio::time::Instant::now(), skew: Arc::new(AtomicI64::new(0)) }
    }

    /// The same clock with a wall-clock step of its own (a node of a simulation, whose clock
    /// can jump alone); other clocks are returned as they are.
    pub fn with_own_skew(&self) -> Clock {
        match self {
            Clock::Runtime { start_ms, origin, .. } => {
                Clock::Runtime { start_ms: *start_ms, origin: *origin, skew: Arc::new(AtomicI64::new(0)) }
            }
            other => other.clone(),
        }
    }

    /// Steps a simulated node's wall clock by `ms` (either way), as NTP or a resumed VM would;
    /// its monotonic clock goes on. Returns false for other clocks, which it leaves alone.
    pub fn jump(&self, ms: i64) -> bool {
        match self {
            Clock::Runtime { skew, .. } => {
                skew.fetch_add(ms, Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }

    /// A monotonic reading in ms, for durations (session expiry): never stepped. Its origin
    /// is arbitrary; only differences mean something. A manual clock has one reading for both.
    pub fn mono_ms(&self) -> i64 {
        match self {
            Clock::System => process_start().elapsed().as_millis() as i64,
            Clock::Manual(t) => t.load(Ordering::SeqCst),
            Clock::Runtime { origin, .. } => origin.elapsed().as_millis() as i64,
        }
    }

    /// Now, in ms since the epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64),
            Clock::Manual(t) => t.load(Ordering::SeqCst),
            Clock::Runtime { start_ms, origin, skew } => {
                start_ms + origin.elapsed().as_millis() as i64 + skew.load(Ordering::SeqCst)
            }
        }
    }

    /// Moves a manual clock forward; no effect on the system clock.
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.fetch_add(ms, Ordering::SeqCst);
        }
    }
}
