//! What a `serve` worker does before it sleeps: on a loaded server it spins for a few
//! microseconds first (`--park-spin-us`), yielding its core to any other runnable thread
//! meanwhile, so that the next request finds it awake.
//!
//! Under pipelined load a tokio worker runs out of tasks for a moment many times a
//! millisecond. Each time it parks (in `epoll_wait`, or on a futex while the other worker
//! holds the I/O driver), and the next readable socket costs a wake-up: a system call by
//! whoever wakes it, a context switch, and on a virtual machine often an idle virtual CPU
//! brought back. A worker that waits a little while still awake is not woken that way, and
//! replies gathered meanwhile leave in fewer writes.
//!
//! The sign of load is how often another worker is still running when one parks: about two
//! parks in three under 8 sessions x 16 in flight, fewer than one in a thousand for one
//! synchronous session or an idle server. A worker spins only while most of its recent parks
//! saw that. Spinning on the occasional overlap instead cost one synchronous session 8-10% of
//! its throughput (docs/performance.md, "Pipelined", has the figures).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

thread_local! {
    /// Whether this worker is counted as awake (from its first unpark on), and its recent
    /// parks (`Load`).
    static WORKER: Cell<(bool, Load)> = const { Cell::new((false, Load::IDLE)) };
}

/// Makes `builder`'s workers spin for `spin` before parking while most of their recent parks
/// found another worker awake; a zero `spin` leaves the runtime as tokio builds it.
pub fn install(builder: &mut tokio::runtime::Builder, spin: Duration) {
    if spin.is_zero() {
        return;
    }
    // Workers between an unpark and their next park. A worker is counted from its first
    // unpark: at start every worker runs until it first parks, and none waits on the others.
    let awake = Arc::new(AtomicUsize::new(0));
    let on_unpark = awake.clone();
    builder.on_thread_unpark(move || {
        on_unpark.fetch_add(1, Ordering::Relaxed);
        WORKER.with(|w| w.set((true, w.get().1)));
    });
    builder.on_thread_park(move || {
        let (counted, load) = WORKER.with(Cell::get);
        if !counted {
            return;
        }
        // Uncounted before spinning: two workers that park together do not keep each other
        // spinning.
        let others_awake = awake.fetch_sub(1, Ordering::Relaxed) > 1;
        let load = load.park(others_awake);
        WORKER.with(|w| w.set((false, load)));
        // Most parks do not spin (all of them for one session): no clock read for those.
        let wait = load.spin(spin);
        if wait.is_zero() {
            return;
        }
        // Yielding rather than spinning: on a machine whose cores the clients share, a client
        // thread runnable here gets the core at once, and the worker still does not sleep.
        // Against a pure spin at 8 x 16 on 2 cores, 1-4% more throughput (docs/performance.md,
        // "Pipelined").
        let started = Instant::now();
        while started.elapsed() < wait {
            std::thread::yield_now();
        }
    });
}

/// A worker's recent parks: a moving average (in 1/1024ths, each park weighing 1/16) of
/// whether another worker was awake when it parked.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Load(u16);

impl Load {
    const IDLE: Load = Load(0);
    /// Most recent parks saw another worker running: spin. A lone overlap moves the average
    /// by 64, so it takes about five in a row from idle.
    const BUSY: u16 = 256;

    /// The average after one more park, with or without another worker awake.
    fn park(self, others_awake: bool) -> Load {
        let target: i32 = if others_awake { 1024 } else { 0 };
        let now = i32::from(self.0);
        Load(u16::try_from(now + (target - now) / 16).expect("between 0 and 1024"))
    }

    /// How long to spin before this park.
    fn spin(self, spin: Duration) -> Duration {
        if self.0 > Self::BUSY {
            spin
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_overlap_does_not_spin_a_run_of_them_does() {
        let spin = Duration::from_micros(20);
        assert_eq!(Load::IDLE.park(true).spin(spin), Duration::ZERO, "one overlap");
        let mut load = Load::IDLE;
        let mut parks = 0;
        while load.spin(spin).is_zero() {
            load = load.park(true);
            parks += 1;
            assert!(parks < 10, "load never reached: {load:?}");
        }
        assert_eq!(parks, 5, "five overlaps in a row from idle");
        // A synchronous session: an overlap now and then among lone parks stays idle.
        let mut load = Load::IDLE;
        for i in 0..10_000 {
            load = load.park(i % 100 == 0);
            assert!(load.spin(spin).is_zero(), "spun at park {i}: {load:?}");
        }
        // Under load: two parks in three overlap, and the worker spins throughout.
        let mut load = Load(1024);
        for i in 0..10_000 {
            load = load.park(i % 3 != 0);
            assert_eq!(load.spin(spin), spin, "stopped at park {i}: {load:?}");
        }
        // Load that ends: spinning stops within a few lone parks.
        let stopped = (1..).find(|_| {
            load = load.park(false);
            load.spin(spin).is_zero()
        });
        assert!(stopped.is_some_and(|n| n < 32), "{stopped:?}");
    }
}
