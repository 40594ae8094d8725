//! Taking snapshots while serving: every `snapshot_distance` committed entries (and on `csnp`)
//! the engine hands a copy of the committed state to a background thread, which serializes,
//! compresses and writes it; when the file is durable the engine compacts the log below it
//! (keeping `reserved_log_items`) and removes snapshots beyond `snapshots_to_keep`.
//!
//! The lock is held for the copy (`State::clone`, a pointer per arena chunk: the chunks are
//! shared copy-on-write), not for the serialization and compression, which take seconds at 1M
//! znodes; compacting the log afterwards holds it only to move the log's first index, the old
//! records go on a thread (docs/performance.md measures each).

use std::io;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use testkeeper_core::snapshot;
use testkeeper_core::state::State;

use super::snapshots;

/// A finished snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub index: u64,
    pub term: u64,
    /// The file, when there is a data directory.
    pub path: Option<PathBuf>,
    /// Size on disk (compressed), or of the body in memory.
    pub bytes: u64,
    /// Time spent off the lock, serializing, compressing, writing and syncing, µs.
    pub write_us: u64,
    /// The serialized state, kept for a cluster node to send lagging followers.
    pub body: Option<std::sync::Arc<Vec<u8>>>,
}

/// The snapshot schedule of one data directory.
#[derive(Debug)]
pub struct Snapshotter {
    /// Where files go; `None`: in memory (a cluster node without a data directory).
    dir: Option<PathBuf>,
    /// Keep each snapshot's body for the caller (a cluster node).
    keep_body: bool,
    distance: u64,
    keep: usize,
    reserved: u64,
    /// Index of the newest snapshot on disk (0: none).
    last: u64,
    running: Option<(u64, JoinHandle<io::Result<Taken>>)>,
    /// Failed writes in a row (0 after a success), and when the next may start: a snapshot
    /// that fails (a full disk) is retried after 1 s, 2 s, 4 s... up to a minute, not on every
    /// commit (41 attempts in 2.8 s before).
    failures_in_a_row: u32,
    retry_at: Option<Instant>,
    /// Failed writes since start, for `mntr` and `/metrics`.
    pub failures: u64,
}

/// The longest wait between two attempts after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

impl Snapshotter {
    /// The schedule for `dir` (`None`: snapshots stay in memory), whose newest snapshot is at
    /// `last`; `keep_body` hands every body back to the caller.
    pub fn new(
        dir: Option<PathBuf>,
        keep_body: bool,
        distance: u64,
        keep: usize,
        reserved: u64,
        last: u64,
    ) -> Snapshotter {
        Snapshotter {
            dir,
            keep_body,
            distance: distance.max(1),
            keep,
            reserved,
            last,
            running: None,
            failures_in_a_row: 0,
            retry_at: None,
            failures: 0,
        }
    }

    /// Index of the newest snapshot taken from now on counts from `last`.
    pub fn set_last(&mut self, last: u64) {
        self.last = last;
    }

    /// Hands every body back from now on (a cluster node).
    pub fn keep_bodies(&mut self) {
        self.keep_body = true;
    }

    /// Whether a snapshot of a state at `applied` is due.
    pub fn due(&self, applied: u64) -> bool {
        self.running.is_none()
            && applied >= self.last + self.distance
            && self.retry_at.is_none_or(|t| Instant::now() >= t)
    }

    /// How long after `failures_in_a_row` failures the next attempt waits.
    fn backoff(failures_in_a_row: u32) -> Duration {
        Duration::from_secs(1u64 << failures_in_a_row.saturating_sub(1).min(6)).min(MAX_BACKOFF)
    }

    /// Whether one is being written.
    pub fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// Index of the newest snapshot on disk.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Starts writing a snapshot of `state` (a copy the caller made under its lock).
    ///
    /// # Panics
    /// When one is already being written (check `busy`).
    pub fn start(&mut self, state: State) {
        assert!(self.running.is_none(), "invariant: one snapshot at a time");
        let (dir, keep_body, index, term) = (self.dir.clone(), self.keep_body, state.last_index(), state.last_term());
        let handle = std::thread::Builder::new()
            .name("testkeeper-snapshot".into())
            .spawn(move || {
                let started = Instant::now();
                let body = snapshot::write(&state);
                drop(state);
                let (path, bytes) = match &dir {
                    Some(d) => {
                        let (p, b) = snapshots::write(d, index, &body)?;
                        (Some(p), b)
                    }
                    None => (None, body.len() as u64),
                };
                let body = keep_body.then(|| std::sync::Arc::new(body));
                Ok(Taken { index, term, path, bytes, write_us: started.elapsed().as_micros() as u64, body })
            })
            .expect("spawning the snapshot thread");
        self.running = Some((index, handle));
    }

    /// The snapshot that finished since the last call, if any: the caller compacts the log to
    /// [`compact_below`](Self::compact_below) and the old files are pruned here.
    ///
    /// # Errors
    /// The write failed (the log is not compacted; the next snapshot tries again).
    pub fn poll(&mut self, wait: bool) -> Option<io::Result<Taken>> {
        let finished = self.running.as_ref().is_some_and(|(_, h)| h.is_finished());
        if !finished && !wait {
            return None;
        }
        let (_, handle) = self.running.take()?;
        let result = handle.join().unwrap_or_else(|_| Err(io::Error::other("the snapshot thread panicked")));
        match &result {
            Ok(_) => (self.failures_in_a_row, self.retry_at) = (0, None),
            Err(_) => {
                self.failures += 1;
                self.failures_in_a_row += 1;
                self.retry_at = Some(Instant::now() + Self::backoff(self.failures_in_a_row));
            }
        }
        if let Ok(t) = &result {
            self.last = t.index;
            if let Some(dir) = &self.dir {
                if let Err(e) = snapshots::prune(dir, self.keep) {
                    return Some(Err(e));
                }
            }
        }
        Some(result)
    }

    /// When the next attempt may start after a failure (`None`: no failure pending).
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// The first log index to keep once the snapshot at `index` is durable.
    pub fn compact_below(&self, index: u64) -> u64 {
        index.saturating_sub(self.reserved) + 1
    }
}

#[cfg(test)]
mod backoff_tests {
    use super::*;
    use crate::config::ServerConfig;
    use crate::core::flavor::Flavor;
    use crate::engine::Engine;

    fn state() -> State {
        State::new(&Engine::fresh_options(&ServerConfig::new(Flavor::Keeper), 0))
    }

    #[test]
    fn the_wait_doubles_from_a_second_to_a_minute() {
        let waits: Vec<u64> = (1..=9).map(|n| Snapshotter::backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn a_failed_write_leaves_no_tmp_and_waits_before_the_next() {
        let tmp = tempfile::tempdir().unwrap();
        // A file where the snapshots directory should be: every write fails.
        let blocked = tmp.path().join("snapshots");
        std::fs::write(&blocked, b"not a directory").unwrap();
        let mut s = Snapshotter::new(Some(blocked.clone()), false, 1, 3, 0, 0);
        s.start(state());
        assert!(matches!(s.poll(true), Some(Err(_))));
        assert_eq!((s.failures, s.due(10)), (1, false), "no retry before the backoff");
        assert!(s.retry_at().is_some());
        let dir = tmp.path().join("ok");
        std::fs::create_dir(&dir).unwrap();
        let mut ok = Snapshotter::new(Some(dir.clone()), false, 1, 3, 0, 0);
        ok.start(state());
        assert!(matches!(ok.poll(true), Some(Ok(_))));
        assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".tmp")));
    }
}
