//! A data directory, and recovery from it.
//!
//! ```text
//! DATA_DIR/
//!   log/                         the sled database (log/sled/): entries, hard state, metadata
//!   snapshots/snapshot_<i>.bin.zst   the state at index i (storage/snapshots.rs)
//! ```
//!
//! Recovery loads the newest snapshot, recomputes its digest and compares it with the stored
//! one, replays the log after it with the per-entry digest check, and restores the sessions
//! with their timeouts. A torn last log record is dropped with a warning naming the file and
//! index. Anything else that does not verify (a bad checksum in the middle, a snapshot whose
//! digest differs, a gap in the indexes, a log missing under existing snapshots, a data
//! directory made with another flavor) refuses to start with an error that names the file, the
//! index and what differed; nothing is overwritten or deleted.
//!
//! # Layout
//! - this file: [`open`], [`StorageError`].
//! - `snapshots`: snapshot files (write, list, read, prune).
//! - `snapshotter`: taking snapshots while serving, and compacting the log under them.

pub mod snapshots;
pub mod snapshotter;

#[cfg(test)]
mod props;

use std::fmt;
use std::path::{Path, PathBuf};

use testkeeper_core::snapshot;
use testkeeper_core::state::State;
use tracing::{info, warn};

use crate::config::{LogBackend, ServerConfig};
use crate::engine::{Engine, Start};
use crate::log::sim::SimLog;
use crate::log::sled::{Meta, SledLog};
use crate::log::{Log, LogError};

/// Why a data directory cannot be served. Every variant names the file, and the index where
/// there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageError {
    Log(LogError),
    Io {
        file: PathBuf,
        why: String,
    },
    Snapshot {
        file: PathBuf,
        index: u64,
        why: String,
    },
    /// A log entry does not replay (its digest differs after applying it).
    Replay {
        file: String,
        index: u64,
        why: String,
    },
    /// The directory was made for another server configuration.
    Mismatch {
        file: PathBuf,
        what: String,
    },
    /// The state to import (`--import`) cannot be read.
    Import(crate::interop::ImportError),
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::Log(e) => write!(f, "{e}"),
            StorageError::Io { file, why } => write!(f, "{}: {why}", file.display()),
            StorageError::Snapshot { file, index, why } => {
                write!(f, "{}: snapshot at index {index}: {why}", file.display())
            }
            StorageError::Replay { file, index, why } => {
                write!(f, "{file}: log entry at index {index} does not replay: {why}")
            }
            StorageError::Mismatch { file, what } => write!(f, "{}: {what}", file.display()),
            StorageError::Import(e) => write!(f, "cannot import {e}"),
        }
    }
}

impl std::error::Error for StorageError {}

impl From<LogError> for StorageError {
    fn from(e: LogError) -> StorageError {
        StorageError::Log(e)
    }
}

/// How far recovery replays the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Every entry (standalone: everything durable is committed).
    All,
    /// Up to the commit index in the hard state (a cluster node: later entries are Raft's to
    /// commit or replace).
    Committed,
}

/// The snapshot recovery loaded.
#[derive(Debug, Clone)]
pub struct LoadedSnapshot {
    pub index: u64,
    pub term: u64,
    /// Size of the file.
    pub bytes: u64,
    /// Its serialized state (a cluster node offers it to lagging followers).
    pub body: std::sync::Arc<Vec<u8>>,
}

/// What recovery found, for the log line and the embedding API.
#[derive(Debug, Clone, Default)]
pub struct Recovery {
    /// The snapshot loaded, if any.
    pub snapshot: Option<LoadedSnapshot>,
    /// Entries replayed after it.
    pub replayed: u64,
    pub warnings: Vec<String>,
}

/// The snapshot directory of `data_dir`.
pub fn snapshot_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("snapshots")
}

/// Erases what testkeeper keeps in `cfg.data_dir` (the log and the snapshots; nothing else in
/// the directory is touched), so the next [`open`] starts a fresh server (`TestKeeper::reset`).
///
/// # Errors
/// A file that cannot be removed, named.
pub fn wipe(cfg: &ServerConfig) -> Result<(), StorageError> {
    let Some(dir) = cfg.data_dir.as_deref() else { return Ok(()) };
    if let LogBackend::Sim(disk) = &cfg.log_backend {
        disk.wipe();
    }
    for sub in [dir.join("log"), snapshot_dir(dir)] {
        match std::fs::remove_dir_all(&sub) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StorageError::Io { file: sub, why: e.to_string() }),
        }
    }
    Ok(())
}

/// Opens `cfg.data_dir` (creating it if new) and recovers the state it holds.
///
/// # Errors
/// See [`StorageError`]: nothing is changed on disk when recovery refuses.
pub fn open(cfg: &ServerConfig, now_ms: i64, replay: Replay) -> Result<(Start, Recovery), StorageError> {
    let dir = cfg.data_dir.as_deref().expect("open is only called with a data directory");
    std::fs::create_dir_all(dir).map_err(|e| StorageError::Io { file: dir.to_path_buf(), why: e.to_string() })?;
    let log_dir = dir.join("log");
    let snap_dir = snapshot_dir(dir);
    let io = |e: std::io::Error| StorageError::Io { file: snap_dir.clone(), why: e.to_string() };
    let (files, stray) = snapshots::list(&snap_dir).map_err(io)?;
    for s in &stray {
        warn!(file = %s.display(), "ignoring an incomplete snapshot (a write interrupted by a crash)");
    }
    let log_missing = |newest: &snapshots::SnapshotFile| StorageError::Mismatch {
        file: log_dir.clone(),
        what: format!(
            "the log holds no metadata, but {} (index {}) exists: the log was deleted or replaced",
            newest.path.display(),
            newest.index
        ),
    };
    // Checked before sled opens the directory, which would create an empty database there.
    if let (LogBackend::Sled, Some(newest), false) = (&cfg.log_backend, files.last(), log_dir.exists()) {
        return Err(log_missing(newest));
    }
    // The newest snapshot is decompressed and its checksum verified before sled opens `log/`,
    // which sled writes to as it opens (its page table, `log/db`): a start refused for a
    // damaged snapshot leaves the whole directory as it was, evidence included.
    let mut newest_body = match files.last() {
        None => None,
        Some(f) => {
            let bad = |why: String| StorageError::Snapshot { file: f.path.clone(), index: f.index, why };
            let body = snapshots::read(&f.path).map_err(|e| bad(e.to_string()))?;
            snapshot::verify_checksum(&body).map_err(|e| bad(e.to_string()))?;
            Some(body)
        }
    };
    let (backend, meta, warnings) = match &cfg.log_backend {
        LogBackend::Sled => {
            let opened = SledLog::open(&log_dir, cfg.fsync == crate::config::Fsync::Always)?;
            (Backend::Sled(opened.log), opened.meta, opened.warnings)
        }
        LogBackend::Sim(disk) => {
            let (log, meta, warnings) = SimLog::open(disk)?;
            (Backend::Sim(log), meta, warnings)
        }
    };
    let log = backend.as_log();
    let meta = match meta {
        Some(m) => check_meta(cfg, &log_dir, m)?,
        None => {
            if let Some(newest) = files.last() {
                return Err(log_missing(newest));
            }
            if log.last_index() > 0 {
                return Err(StorageError::Mismatch {
                    file: log_dir,
                    what: "the log has entries but no metadata".into(),
                });
            }
            let opts = Engine::fresh_options(cfg, now_ms);
            let meta = Meta {
                flavor: cfg.flavor.to_string(),
                digest_enabled: cfg.digest_enabled,
                zk_session_base: opts.rules.first_session_id,
                feature_flags: opts.feature_flags,
                api_version: opts.api_version,
            };
            backend.write_meta(&meta)?;
            meta
        }
    };
    let mut log: Box<dyn Log> = backend.boxed();
    let opts = testkeeper_core::state::StateOptions {
        rules: testkeeper_core::flavor::Rules::new(cfg.flavor, meta.zk_session_base)
            .for_zookeeper_version(cfg.zookeeper_version),
        digest_enabled: meta.digest_enabled,
        feature_flags: meta.feature_flags.clone(),
        api_version: meta.api_version.clone(),
        zookeeper_config: Vec::new(),
    };
    let mut recovery = Recovery { warnings, ..Recovery::default() };
    let mut state = match files.last() {
        None => State::new(&opts),
        Some(f) => {
            let bad = |why: String| StorageError::Snapshot { file: f.path.clone(), index: f.index, why };
            let body = newest_body.take().expect("read and verified above, before the log opened");
            let state = snapshot::read(&body, &opts.rules, |_| {}).map_err(|e| bad(e.to_string()))?;
            if state.last_index() != f.index {
                return Err(bad(format!(
                    "the file name says index {}, the snapshot holds {}",
                    f.index,
                    state.last_index()
                )));
            }
            let bytes = std::fs::metadata(&f.path).map_or(0, |m| m.len());
            let term = state.last_term();
            recovery.snapshot = Some(LoadedSnapshot { index: f.index, term, bytes, body: std::sync::Arc::new(body) });
            state
        }
    };
    let log_name = log_dir.display().to_string();
    let from = state.last_index() + 1;
    if log.first_index() > from {
        return Err(LogError::Gap { file: log_name, after: state.last_index(), next: log.first_index() }.into());
    }
    // Replay in chunks: the log may hold hundreds of thousands of entries.
    let upto = match replay {
        Replay::All => log.last_index(),
        Replay::Committed => log.hard_state().commit.min(log.last_index()),
    };
    let mut next = from;
    while next <= upto {
        let to = (next + 4096).min(upto + 1);
        for e in log.entries(next, to)? {
            state.apply(&e).map_err(|m| StorageError::Replay {
                file: log_name.clone(),
                index: e.index(),
                why: m.to_string(),
            })?;
            recovery.replayed += 1;
        }
        next = to;
    }
    // Everything verified: only now may opening write (a refused start leaves the directory).
    log.finish_open()?;
    info!(
        dir = %dir.display(),
        snapshot = ?recovery.snapshot.as_ref().map(|s| s.index),
        replayed = recovery.replayed,
        last_index = state.last_index(),
        sessions = state.sessions().len(),
        "recovered the data directory"
    );
    Ok((Start { state, log }, recovery))
}

/// The log as opened, before it is boxed: the metadata of a new directory is written through
/// the backend it describes.
enum Backend {
    Sled(SledLog),
    Sim(SimLog),
}

impl Backend {
    fn as_log(&self) -> &dyn Log {
        match self {
            Backend::Sled(l) => l,
            Backend::Sim(l) => l,
        }
    }

    fn write_meta(&self, meta: &Meta) -> Result<(), StorageError> {
        match self {
            Backend::Sled(l) => l.write_meta(meta)?,
            Backend::Sim(l) => l.write_meta(meta),
        }
        Ok(())
    }

    fn boxed(self) -> Box<dyn Log> {
        match self {
            Backend::Sled(l) => Box::new(l),
            Backend::Sim(l) => Box::new(l),
        }
    }
}

fn check_meta(cfg: &ServerConfig, log_dir: &Path, meta: Meta) -> Result<Meta, StorageError> {
    let mismatch = |what: String| Err(StorageError::Mismatch { file: log_dir.to_path_buf(), what });
    if meta.flavor != cfg.flavor.to_string() {
        return mismatch(format!("the data directory was made with --flavor {}, not {}", meta.flavor, cfg.flavor));
    }
    if meta.digest_enabled != cfg.digest_enabled {
        let (was, now) =
            if meta.digest_enabled { ("on", "--no-digest") } else { ("off (--no-digest)", "the digest on") };
        return mismatch(format!("the data directory was made with the digest {was}; it cannot be served with {now}"));
    }
    let flags = cfg.feature_flags.to_bytes();
    if meta.feature_flags != flags {
        return mismatch(format!(
            "the data directory was made with feature flags {:?}, not {:?} (--feature-flags)",
            meta.feature_flags, flags
        ));
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkeeper_core::flavor::Flavor;

    #[test]
    fn a_deleted_log_under_snapshots_refuses_without_creating_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = ServerConfig::new(Flavor::Keeper);
        cfg.data_dir = Some(dir.path().to_path_buf());
        let state = State::new(&Engine::fresh_options(&cfg, 0));
        snapshots::write(&snapshot_dir(dir.path()), 0, &snapshot::write(&state)).unwrap();
        let err = open(&cfg, 0, Replay::All).err().expect("refused").to_string();
        assert!(err.contains("snapshot_0.bin.zst (index 0) exists: the log was deleted"), "{err}");
        assert!(err.starts_with(&dir.path().join("log").display().to_string()), "names the log: {err}");
        assert!(!dir.path().join("log").exists(), "no empty log was created");
    }
}
