//! The one way into the engine: a lock whose release appends what was proposed under it, in
//! one write, and hands every reply to its connection's writer; and, for a log that must be
//! flushed, the syncer thread that flushes outside the lock and commits what the flush covers.
//!
//! Group commit falls out of this shape: while one flush runs, every lock holder keeps
//! appending, and the next flush covers all of them.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use tracing::error;

use super::Engine;
use crate::config::{Fsync, ServerConfig};
use crate::log::Syncer;

/// What every connection task, the HTTP endpoint and the embedding API share.
pub struct Shared {
    pub cfg: Arc<ServerConfig>,
    /// The network shell's counters (`/metrics`), kept outside the lock.
    pub net: super::stats::NetCounters,
    engine: Mutex<Engine>,
    /// Wakes the syncer: `true` when appended entries wait for a flush, and whether to stop.
    wake: Mutex<Wake>,
    cond: Condvar,
    syncer_thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug, Default)]
struct Wake {
    pending: bool,
    stop: bool,
}

impl Shared {
    /// Wraps an engine; with a log that needs flushing before an entry counts (`--fsync
    /// always`), starts the syncer thread.
    pub fn new(cfg: Arc<ServerConfig>, engine: Engine) -> Arc<Shared> {
        let syncer = engine.syncer().filter(|_| cfg.fsync == Fsync::Always);
        let shared = Arc::new(Shared {
            cfg,
            net: super::stats::NetCounters::default(),
            engine: Mutex::new(engine),
            wake: Mutex::new(Wake::default()),
            cond: Condvar::new(),
            syncer_thread: Mutex::new(None),
        });
        shared.start_syncer(syncer);
        shared
    }

    fn start_syncer(self: &Arc<Self>, syncer: Option<Arc<dyn Syncer>>) {
        if let Some(syncer) = syncer {
            let weak = Arc::downgrade(self);
            let handle = std::thread::Builder::new()
                .name("testkeeper-syncer".into())
                .spawn(move || sync_loop(&weak, syncer.as_ref()))
                .expect("spawning the syncer thread");
            *self.syncer_thread.lock().expect("syncer handle") = Some(handle);
        }
    }

    /// Starts over as a fresh server (`TestKeeper::reset`, `POST /api/v1/reset`): in memory a
    /// new state; with a data directory, its log and snapshots deleted and the directory opened
    /// anew. Returns the recovery of that open (an empty one).
    ///
    /// # Errors
    /// A data directory that cannot be emptied or opened; the server then refuses every request.
    pub fn reset(self: &Arc<Self>) -> Result<Option<crate::storage::Recovery>, crate::storage::StorageError> {
        let (cfg, clock) = (self.cfg.clone(), self.engine().clock.clone());
        let mut recovery = None;
        self.reset_with(|| {
            crate::storage::wipe(&cfg)?;
            let (engine, r) = Engine::open(cfg.clone(), clock)?;
            recovery = r;
            Ok(engine)
        })?;
        tracing::info!("reset: the tree, sessions and fault rules start over");
        Ok(recovery)
    }

    /// Replaces the engine with a fresh one (`TestKeeper::reset`, `POST /api/v1/reset`): the
    /// old one shuts down cleanly and lets go of its storage, every connection is closed (its
    /// session is gone with the old state), then `build` makes the new engine, under the lock,
    /// so no request reaches either half-way. Connection ids carry on, so the task of a closing
    /// connection can never touch a new one. Listener, timer and HTTP endpoint keep running.
    ///
    /// # Errors
    /// What `build` returns; the server then refuses every request, as a stopped one does.
    fn reset_with(
        self: &Arc<Self>,
        build: impl FnOnce() -> Result<Engine, crate::storage::StorageError>,
    ) -> Result<(), crate::storage::StorageError> {
        self.stop_syncer(true);
        let mut e = self.engine();
        e.finish();
        let conns: Vec<u64> = e.conns.keys().copied().collect();
        for c in conns {
            e.conns.close(c);
            e.disconnect(c);
        }
        e.release_storage();
        // Connection ids are never reused: a reader of the old table may still hold one.
        let next_conn = e.conns.next_id();
        let mut fresh = build()?;
        fresh.conns = crate::engine::Conns::starting_at(next_conn);
        let syncer = fresh.syncer().filter(|_| self.cfg.fsync == Fsync::Always);
        *e = fresh;
        drop(e);
        *self.wake.lock().expect("wake lock") = Wake::default();
        self.start_syncer(syncer);
        Ok(())
    }

    /// Locks the engine. A panic inside the engine is a broken invariant: the poison is not
    /// cleared, so every later request fails loudly instead of serving a diverged tree.
    /// Public for the engine's benchmark (`benches/engine.rs`), which drives it as a
    /// connection does.
    pub fn engine(&self) -> EngineGuard<'_> {
        let mut engine = (self.engine.lock())
            .unwrap_or_else(|_| panic!("engine poisoned by an earlier invariant failure; refusing to serve"));
        engine.readings.hold();
        EngineGuard { engine, shared: self }
    }

    /// Stops the syncer thread; `drain` lets it flush what it was told about first.
    fn stop_syncer(&self, drain: bool) {
        {
            let mut w = self.wake.lock().expect("wake lock");
            w.stop = true;
            if !drain {
                w.pending = false;
            }
        }
        self.cond.notify_all();
        let handle = self.syncer_thread.lock().expect("syncer handle").take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// A clean shutdown: what was proposed is appended and flushed (and so committed and
    /// answered), a snapshot being written finishes, and the storage is released so the data
    /// directory can be opened again.
    pub fn close(&self) {
        self.stop_syncer(true);
        let mut e = self.engine();
        e.finish();
        e.release_storage();
    }

    /// A crash: nothing more is appended or flushed, and the storage is released as it is (a
    /// snapshot being written finishes first: a crash just after it).
    pub fn abandon(&self) {
        self.stop_syncer(false);
        let mut e = self.engine.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        e.release_storage();
    }

    fn notify_syncer(&self) {
        self.wake.lock().expect("wake lock").pending = true;
        self.cond.notify_one();
    }
}

/// Flushes whenever entries wait, then commits what the flush covered, until told to stop.
fn sync_loop(shared: &Weak<Shared>, syncer: &dyn Syncer) {
    loop {
        {
            let Some(s) = shared.upgrade() else { return };
            let mut w = s.wake.lock().expect("wake lock");
            while !w.pending && !w.stop {
                w = s.cond.wait(w).expect("wake lock");
            }
            if w.stop && !w.pending {
                return;
            }
            w.pending = false;
        }
        let started = Instant::now();
        let durable = match syncer.sync() {
            Ok(i) => i,
            Err(e) => {
                // An entry that cannot be made durable must never be acknowledged.
                error!(error = %e, "flushing the log failed; stopping");
                panic!("log flush failed: {e}");
            }
        };
        let us = started.elapsed().as_micros() as u64;
        let Some(s) = shared.upgrade() else { return };
        s.engine().durable(durable, us);
    }
}

/// The locked engine. Releasing it appends what was proposed and hands what was answered to
/// the connections' writers, so every caller, batch or not, sends what it queued.
pub struct EngineGuard<'a> {
    engine: MutexGuard<'a, Engine>,
    shared: &'a Shared,
}

impl Deref for EngineGuard<'_> {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        // A panic inside the engine is a broken invariant: send nothing more of that state.
        if std::thread::panicking() {
            return;
        }
        self.engine.settle();
        self.engine.readings.release();
        self.engine.conns.flush_all();
        if self.engine.needs_sync() {
            self.shared.notify_syncer();
        }
    }
}
