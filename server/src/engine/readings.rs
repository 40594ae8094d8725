//! The clock as one hold of the engine lock sees it: each reading is taken at most once per
//! hold and shared by every request of the batch handled under it.
//!
//! Pipelined clients hand the engine several requests per lock, and each request read the
//! system clock four or five times (its start, its session's touch, its entry's time, its
//! reply's time): about 4% of the server's CPU under 8 sessions x 16 in flight
//! (docs/performance.md, "Pipelined"). The requests of one batch arrived together, so one
//! reading serves them all. Only the system clock is held: a manual clock moves when a test
//! says, even inside a hold, and a simulation's clock stands still within one anyway.

use std::time::Instant;

use super::Engine;
use crate::clock::Clock;

/// The readings taken during the current hold, if the engine is held (`Shared::engine`).
#[derive(Debug, Default)]
pub(crate) struct Readings {
    held: bool,
    instant: Option<Instant>,
    wall_ms: Option<i64>,
    mono_ms: Option<i64>,
}

impl Readings {
    /// A hold starts: readings from now on are kept until it ends.
    pub(crate) fn hold(&mut self) {
        *self = Readings { held: true, ..Readings::default() };
    }

    /// The hold ended: every reading is taken afresh.
    pub(crate) fn release(&mut self) {
        *self = Readings::default();
    }

    /// `clock`'s wall time in ms since the epoch, for what is written into entries. A method
    /// of the readings, not of the engine, so that the proposer can take it while the engine's
    /// sequencer is borrowed.
    pub(crate) fn wall_ms(&mut self, clock: &Clock) -> i64 {
        let held = self.held && matches!(clock, Clock::System);
        kept(held, &mut self.wall_ms, || clock.now_ms())
    }

    /// `clock`'s monotonic time in ms, for session deadlines.
    pub(crate) fn mono_ms(&mut self, clock: &Clock) -> i64 {
        let held = self.held && matches!(clock, Clock::System);
        kept(held, &mut self.mono_ms, || clock.mono_ms())
    }
}

/// `slot`'s reading, taking it with `read` first when the hold has none yet (or there is no
/// hold, or the clock is not the system's).
fn kept<T: Copy>(held: bool, slot: &mut Option<T>, read: impl FnOnce() -> T) -> T {
    if !held {
        return read();
    }
    *slot.get_or_insert_with(read)
}

impl Engine {
    /// When the requests of this hold started, for their latency.
    pub(crate) fn started_at(&mut self) -> Instant {
        let held = self.readings.held;
        kept(held, &mut self.readings.instant, Instant::now)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn a_hold_reads_once_and_no_hold_reads_every_time() {
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            reads.get()
        };
        let mut r = Readings::default();
        assert_eq!((kept(r.held, &mut r.wall_ms, read), kept(r.held, &mut r.wall_ms, read)), (1, 2));
        r.hold();
        assert_eq!((kept(r.held, &mut r.wall_ms, read), kept(r.held, &mut r.wall_ms, read)), (3, 3));
        r.release();
        assert_eq!(kept(r.held, &mut r.wall_ms, read), 4, "a released hold keeps nothing");
        r.hold();
        assert_eq!(kept(r.held, &mut r.wall_ms, read), 5, "a new hold reads afresh");
    }

    #[test]
    fn a_manual_clock_is_read_afresh_inside_a_hold() {
        let cfg = std::sync::Arc::new(crate::config::ServerConfig::new(crate::core::flavor::Flavor::Keeper));
        let clock = Clock::manual(1_000);
        let mut engine = Engine::new(cfg, clock.clone());
        engine.readings.hold();
        assert_eq!(engine.readings.wall_ms(&clock), 1_000);
        clock.advance(5);
        assert_eq!((engine.readings.wall_ms(&clock), engine.readings.mono_ms(&clock)), (1_005, 1_005));
    }
}
