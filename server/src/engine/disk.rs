//! Free space on the data directory's filesystem, checked before a write is proposed: below
//! `--keep-free-space-bytes` the server refuses writes with NOTREADONLY (-119), the answer a
//! read-only ZooKeeper server gives a write, and keeps serving reads; it takes writes again on
//! its own once space is back. A flush that still fails with ENOSPC stops the process as
//! before (nothing unflushed is ever answered), but the margin keeps a filling disk from
//! reaching that point (docs/persistence.md, "A full disk").
//!
//! While free space is well above the margin (four times it), the check reads `statvfs` at
//! most every [`RECHECK`], so a burst of writes costs one system call per interval; closer to
//! the margin it reads it before every write, because a burst of large writes (sled writes
//! each about three times over, measured on tmpfs) can cross the margin within one interval.
//! It decides only whether a request is admitted, never what an entry does, so the state
//! machine stays deterministic.
//!
//! A cluster node's driver asks a twin of the guard too, every tick (`cluster/driver/disk.rs`):
//! a leader below the margin hands its leadership on (its engine refuses the writes); a follower stops taking
//! entries and serves no read until there is room and it has caught up. Under `testkeeper sim`
//! the guard reads the simulated disk instead of the filesystem.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tracing::{info, warn};

/// How stale a free-space reading may be.
const RECHECK: Duration = Duration::from_millis(200);

/// Where the free space is read.
#[derive(Debug)]
enum Source {
    Fs(PathBuf),
    Sim(crate::log::sim::SimDisk),
}

/// The guard of one data directory.
#[derive(Debug)]
pub(crate) struct DiskGuard {
    source: Source,
    keep: u64,
    checked: Option<Instant>,
    /// Free bytes at the last reading.
    free: u64,
    low: bool,
    /// Writes refused since start, for `mntr`.
    pub(crate) refused: u64,
}

impl DiskGuard {
    /// A guard that keeps `keep` bytes free on `dir`'s filesystem (0: no guard).
    pub(crate) fn new(dir: PathBuf, keep: u64) -> Option<DiskGuard> {
        Self::over(Source::Fs(dir), keep)
    }

    /// A guard of a simulated disk (`log/sim`): low while the simulation has filled it.
    pub(crate) fn simulated(disk: crate::log::sim::SimDisk, keep: u64) -> Option<DiskGuard> {
        Self::over(Source::Sim(disk), keep)
    }

    /// A guard of the same disk and margin with a reading of its own (a cluster node's driver
    /// reads its twin every tick, and never the engine's).
    pub(crate) fn twin(&self) -> DiskGuard {
        let source = match &self.source {
            Source::Fs(dir) => Source::Fs(dir.clone()),
            Source::Sim(disk) => Source::Sim(disk.clone()),
        };
        DiskGuard { source, keep: self.keep, checked: None, free: u64::MAX, low: false, refused: 0 }
    }

    fn over(source: Source, keep: u64) -> Option<DiskGuard> {
        (keep > 0).then_some(DiskGuard { source, keep, checked: None, free: u64::MAX, low: false, refused: 0 })
    }

    /// Whether writes must be refused now; logs each change.
    pub(crate) fn low(&mut self) -> bool {
        let free = match &self.source {
            // No wall clock and no filesystem: a simulation must not depend on either.
            Source::Sim(disk) => {
                if disk.is_full() {
                    0
                } else {
                    u64::MAX
                }
            }
            Source::Fs(dir) => {
                let now = Instant::now();
                let roomy = self.free / 4 >= self.keep;
                if roomy && self.checked.is_some_and(|t| now.duration_since(t) < RECHECK) {
                    return self.low;
                }
                self.checked = Some(now);
                // A filesystem that cannot be asked keeps the last answer.
                let Ok(free) = fs2::available_space(dir) else { return self.low };
                free
            }
        };
        self.free = free;
        let low = free < self.keep;
        if low != self.low {
            let dir = match &self.source {
                Source::Fs(d) => d.display().to_string(),
                Source::Sim(_) => "(simulated disk)".to_string(),
            };
            if low {
                warn!(
                    dir,
                    free,
                    keep = self.keep,
                    "free space below --keep-free-space-bytes: refusing writes (NOTREADONLY) until there is room"
                );
            } else {
                info!(dir, free, "free space is back: taking writes again");
            }
            self.low = low;
        }
        low
    }

    /// Whether writes are being refused, as of the last check (for `mntr`).
    pub(crate) fn is_low(&self) -> bool {
        self.low
    }
}

impl super::Engine {
    /// Whether the data directory's disk is below its margin now (false without a guard).
    pub(crate) fn disk_low_now(&mut self) -> bool {
        self.disk.as_mut().is_some_and(DiskGuard::low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_no_guard_and_an_impossible_margin_refuses() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DiskGuard::new(dir.path().into(), 0).is_none());
        let mut g = DiskGuard::new(dir.path().into(), u64::MAX).unwrap();
        assert!(g.low() && g.is_low());
        let mut ok = DiskGuard::new(dir.path().into(), 1).unwrap();
        assert!(!ok.low());
    }
}
