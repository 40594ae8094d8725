//! The engine: the one owner of the state machine and of the per-server tables around it
//! (runtime sessions, connections, watches, stats, faults), and the one request path:
//!
//! 1. `dispatch`: a request joins its session's ordered stream (`order`); reads and local
//!    ops run when every earlier request of the session is done, writes are proposed at once.
//! 2. The sequencer (`sequencer`): standalone `local_log`, in a cluster the leader's proposer
//!    and the Raft driver. The proposer decides the entry (index, zxid, time, digest after it)
//!    against the committed tree plus every uncommitted change; the entry goes to the log.
//! 3. When the log says the entry is committed (at once in memory, after the flush that
//!    covers it on disk), `apply` changes the tree and checks the digest, the watches fire,
//!    and whoever waits for that index gets its reply.
//!
//! The engine is reached only through [`Shared`] (one lock; releasing it appends what was
//! proposed and flushes what was answered), never handed out to embedders.
//!
//! # Layout
//! - `shared`: the lock, its guard, and the syncer thread that makes durable entries commit.
//! - `conns`: connections and their output buffers.
//! - `backlog`: the bytes a connection has queued and not yet written (backpressure).
//! - `dispatch`: one request to its place in the session's order; reads and local ops.
//! - `order`: the per-session FIFO of requests waiting behind uncommitted writes.
//! - `sequencer`: [`Sequencer`](sequencer::Sequencer), who orders entries (the local log, or
//!   raft); the request path asks it what differs between the two.
//! - `local_log`: the standalone proposer and log: decide, append in one write, flush.
//! - `commit`: commit, apply and reply by index (proposing is `sequencer`'s).
//! - `waiters`: who waits for each proposed entry, and the origins entries carry.
//! - `snapshots`: when to snapshot, and compacting the log under a finished snapshot.
//! - `sessions`: [`Sessions`], the live sessions' run-time records and each one's place in the
//!   per-session order: whether a request runs now or waits, which sessions are due.
//! - `session`: the engine's side of sessions: handshake, resumption, disconnect, expiry,
//!   container/TTL collection.
//! - `faults`: what each fault action does to a request on this path.
//! - `internal_ops`: ZooKeeper's answers to the opcodes it keeps for itself (sasl, ...).
//! - `reply`: outcome -> wire response; watch registration after reads.
//! - `stats`: counters for the four-letter words and metrics.

pub mod backlog;
mod broken;
mod commit;
mod conns;
mod disk;
mod dispatch;
mod faults;
mod internal_ops;
mod local_log;
mod log_info;
mod order;
mod readings;
mod reply;
mod sequencer;
pub mod session;
pub mod sessions;
mod shared;
mod snapshots;
pub mod stats;
pub(crate) mod waiters;

use std::sync::Arc;

use testkeeper_core::flavor::{zookeeper_session_base, Rules};
use testkeeper_core::state::{State, StateOptions};
use testkeeper_core::watches::Watches;

use crate::clock::Clock;
use crate::config::ServerConfig;
use crate::faults::Faults;
use crate::log::memory::MemLog;
use crate::log::Log;
use crate::storage::snapshotter::Snapshotter;
use crate::storage::{Recovery, StorageError};
pub use conns::{ConnInfo, Conns, Out};
pub(crate) use disk::DiskGuard;
pub use dispatch::Flow;
pub use log_info::LogInfo;
pub use session::Handshake;
pub use sessions::{End, SessionRt, Sessions};
pub use shared::{EngineGuard, Shared};
use stats::Stats;

/// The state machine plus everything around it that is per server.
pub struct Engine {
    pub(crate) cfg: Arc<ServerConfig>,
    pub(crate) clock: Clock,
    /// The committed state; only `commit` applies entries to it.
    pub(crate) state: State,
    /// Who orders the entries: standalone this engine's proposer and log; a cluster node's
    /// part in its cluster (driver link, role, the leader's proposer, syncs, faults).
    pub(crate) seq: sequencer::Sequencer,
    /// Who waits for each proposed entry, by the origin the entry carries.
    waiters: waiters::Waiters,
    pub(crate) watches: Watches,
    pub(crate) sessions: Sessions,
    pub(crate) conns: Conns,
    pub(crate) stats: Stats,
    /// Fault rules, their seeded generator and the log of fired faults.
    pub(crate) faults: Faults,
    /// Log and snapshot figures for `lgif`, `mntr` and `/metrics`.
    pub(crate) log_info: LogInfo,
    /// The snapshot schedule, with a data directory.
    snapshotter: Option<Snapshotter>,
    last_gc_ms: i64,
    /// Shut down or crashed: nothing more is served (see `release_storage`).
    pub(crate) stopped: bool,
    /// Why a cluster node stopped serving (a digest mismatch), if it did.
    pub(crate) stop_reason: Option<String>,
    /// With a data directory: refuses writes while its filesystem is nearly full.
    pub(crate) disk: Option<disk::DiskGuard>,
    /// The clock readings of the current hold of the lock (`readings`).
    pub(crate) readings: readings::Readings,
}

/// How a new engine starts: the state and the log it continues.
pub struct Start {
    pub state: State,
    pub log: Box<dyn Log>,
}

impl Engine {
    /// The engine `cfg` asks for: in memory, or recovered from its data directory.
    ///
    /// # Errors
    /// A data directory that cannot be recovered (see `storage::StorageError`).
    pub fn open(cfg: Arc<ServerConfig>, clock: Clock) -> Result<(Engine, Option<Recovery>), StorageError> {
        if let (Some(_), Some(dir)) = (&cfg.import, &cfg.data_dir) {
            return Err(StorageError::Mismatch {
                file: dir.clone(),
                what: "an import starts in memory and cannot be combined with a data directory".into(),
            });
        }
        if let (Some(path), None) = (&cfg.import, &cfg.data_dir) {
            let opts = Self::fresh_options(&cfg, clock.now_ms());
            let imported = crate::interop::import(path, &opts).map_err(StorageError::Import)?;
            if imported.digest_matches() == Some(false) {
                tracing::warn!(
                    stored = imported.stored_digest,
                    tree = imported.state.tree().digest(),
                    "the imported snapshot stores another digest than its tree has (Keeper counts its \
                     /keeper system nodes, whose data differ between versions)"
                );
            }
            let state = imported.state;
            tracing::info!(
                format = imported.format,
                files = ?imported.files,
                nodes = state.tree().len(),
                sessions = state.sessions().len(),
                zxid = format_args!("{:#x}", state.zxid()),
                txns = imported.txns_applied,
                "imported"
            );
            let log = Box::new(MemLog::new(cfg.retain_log, state.last_index()));
            return Ok((Engine::with(cfg, clock, Start { state, log }), None));
        }
        if cfg.data_dir.is_none() {
            return Ok((Engine::new(cfg, clock), None));
        }
        let (start, recovery) = crate::storage::open(&cfg, clock.now_ms(), crate::storage::Replay::All)?;
        Ok((Engine::recovered(cfg, clock, start, &recovery), Some(recovery)))
    }

    /// An engine over a recovered data directory.
    pub(crate) fn recovered(cfg: Arc<ServerConfig>, clock: Clock, start: Start, recovery: &Recovery) -> Engine {
        let mut engine = Engine::with(cfg, clock, start);
        if let (Some(s), Some(snap)) = (engine.snapshotter.as_mut(), &recovery.snapshot) {
            s.set_last(snap.index);
            engine.log_info.last_snapshot_index = snap.index;
            engine.log_info.last_snapshot_bytes = snap.bytes;
        }
        engine
    }
}

impl Engine {
    /// The state options of a fresh server with `cfg`, the ZooKeeper session base taken from
    /// `now_ms` (the one startup choice replay depends on; a data directory keeps it).
    pub fn fresh_options(cfg: &ServerConfig, now_ms: i64) -> StateOptions {
        StateOptions {
            rules: Rules::new(cfg.flavor, zookeeper_session_base(now_ms)).for_zookeeper_version(cfg.zookeeper_version),
            digest_enabled: cfg.digest_enabled,
            feature_flags: cfg.feature_flags.to_bytes(),
            api_version: cfg.feature_flags.api_version().to_string().into_bytes(),
            zookeeper_config: Vec::new(),
        }
    }

    /// A fresh in-memory engine with the flavor's system nodes.
    pub fn new(cfg: Arc<ServerConfig>, clock: Clock) -> Engine {
        let state = State::new(&Self::fresh_options(&cfg, clock.now_ms()));
        let log = Box::new(MemLog::new(cfg.retain_log, state.last_index()));
        Engine::with(cfg, clock, Start { state, log })
    }

    /// An engine that continues `start` (a fresh state, or one recovered from disk).
    pub fn with(cfg: Arc<ServerConfig>, clock: Clock, start: Start) -> Engine {
        let Start { state, log } = start;
        let now = clock.now_ms();
        let mut log_info = LogInfo::of(log.as_ref(), &state);
        log_info.first_index = log.first_index();
        let broken = cfg.broken == Some(crate::broken::Broken::PartialMulti);
        let local = local_log::LocalLog::new(&state, log, cfg.fsync == crate::config::Fsync::Always, broken);
        let snapshotter = cfg.data_dir.as_ref().map(|d| {
            let (distance, keep, reserved) = (cfg.snapshot_distance, cfg.snapshots_to_keep, cfg.reserved_log_items);
            Snapshotter::new(Some(crate::storage::snapshot_dir(d)), false, distance, keep, reserved, 0)
        });
        // Sessions restored from disk live on until their timeouts, counted from now: their
        // clients may come back, and their ephemerals go with them if not.
        let sessions = (state.sessions().iter())
            .map(|(id, info)| {
                let rt = SessionRt {
                    timeout_ms: info.timeout_ms,
                    deadline_ms: clock.mono_ms() + i64::from(info.timeout_ms),
                    ..Default::default()
                };
                (*id, rt)
            })
            .collect();
        let mut engine = Engine {
            faults: Faults::new(cfg.seed),
            cfg,
            clock,
            state,
            seq: sequencer::Sequencer::Local(local),
            waiters: waiters::Waiters::default(),
            watches: Watches::default(),
            sessions,
            conns: Conns::starting_at(1),
            stats: Stats::default(),
            log_info,
            snapshotter,
            last_gc_ms: now,
            stopped: false,
            stop_reason: None,
            disk: None,
            readings: readings::Readings::default(),
        };
        // A simulated log is not on the filesystem: its guard reads the simulated disk, as
        // guarding the real disk's free space would make a simulation depend on the machine.
        let keep = engine.cfg.keep_free_space_bytes;
        engine.disk = match &engine.cfg.log_backend {
            crate::config::LogBackend::Sim(d) => disk::DiskGuard::simulated(d.clone(), keep),
            _ => engine.cfg.data_dir.clone().and_then(|d| disk::DiskGuard::new(d, keep)),
        };
        engine
    }

    /// The committed state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Joins a cluster as node `node`: proposals go to its driver from now on, and snapshots
    /// (in memory without a data directory) are handed to the driver for lagging followers.
    pub(crate) fn join_cluster(&mut self, replica: crate::cluster::Replica) {
        self.waiters.join(replica.link.node, self.clock.now_ms() as u64);
        self.seq = sequencer::Sequencer::Raft(Box::new(replica));
        let (distance, keep, reserved) =
            (self.cfg.snapshot_distance, self.cfg.snapshots_to_keep, self.cfg.reserved_log_items);
        let last = self.state.last_index();
        let s = self.snapshotter.get_or_insert_with(|| Snapshotter::new(None, true, distance, keep, reserved, last));
        s.keep_bodies();
    }

    /// Hands the log to a cluster node's Raft storage (the engine keeps none of its own then).
    ///
    /// # Panics
    /// On a cluster node: its log went to the driver when it joined.
    pub(crate) fn take_log(&mut self) -> Box<dyn Log> {
        self.seq.take_log().expect("the log is taken before the engine joins a cluster")
    }

    /// The log's syncer, when entries must be flushed before they count.
    pub(crate) fn syncer(&self) -> Option<Arc<dyn crate::log::Syncer>> {
        self.seq.syncer()
    }

    /// Whether entries are proposed that have not committed yet.
    pub fn has_uncommitted(&self) -> bool {
        !self.waiters.is_empty()
    }

    /// Restarts every session's expiry countdown (after an in-memory restart, as ZooKeeper's
    /// sessions get their timeouts again when it comes back).
    pub(crate) fn restart_session_clocks(&mut self) {
        self.sessions.touch_all(self.clock.mono_ms());
    }

    /// Appends and flushes what was proposed, and finishes a snapshot being written.
    pub(crate) fn finish(&mut self) {
        self.settle();
        if let Some(syncer) = self.syncer().filter(|_| self.needs_sync()) {
            let started = std::time::Instant::now();
            match syncer.sync() {
                Ok(i) => self.durable(i, started.elapsed().as_micros() as u64),
                Err(e) => tracing::error!(error = %e, "the last flush failed; unflushed writes were not acknowledged"),
            }
        }
        self.poll_snapshot(true);
        self.conns.flush_all();
    }

    /// Stops serving for good and lets go of the data directory (so it can be opened again):
    /// every later request is refused.
    pub(crate) fn release_storage(&mut self) {
        self.poll_snapshot(true);
        self.stopped = true;
        self.seq.release();
    }

    /// Periodic work: expire sessions whose deadline passed, collect empty containers and
    /// expired TTL nodes.
    pub fn tick(&mut self) {
        if self.stopped {
            return;
        }
        self.poll_snapshot(false);
        if !self.leads() {
            // Only the leader expires sessions and collects containers, through the log.
            return;
        }
        self.expire_due(self.clock.mono_ms());
        let now = self.clock.now_ms();
        if now - self.last_gc_ms >= self.cfg.container_check_ms as i64 {
            self.last_gc_ms = now;
            self.collect_containers_and_ttls(now);
        }
    }
}

/// A session password: 16 bytes from the operating system's generator, so that nothing the
/// server prints (its seed included) tells what they are.
pub fn random_passwd() -> [u8; 16] {
    use rand::RngCore;
    let mut s = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut s);
    s
}
