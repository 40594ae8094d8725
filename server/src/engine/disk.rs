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

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tracing::{info, warn};

/// How stale a free-space reading may be.
const RECHECK: Duration = Duration::from_millis(200);

/// The guard of one data directory.
#[derive(Debug)]
pub(crate) struct DiskGuard {
    dir: PathBuf,
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
        (keep > 0).then_some(DiskGuard { dir, keep, checked: None, free: u64::MAX, low: false, refused: 0 })
    }

    /// Whether writes must be refused now; logs each change.
    pub(crate) fn low(&mut self) -> bool {
        let now = Instant::now();
        let roomy = self.free / 4 >= self.keep;
        if roomy && self.checked.is_some_and(|t| now.duration_since(t) < RECHECK) {
            return self.low;
        }
        self.checked = Some(now);
        // A filesystem that cannot be asked keeps the last answer.
        let Ok(free) = fs2::available_space(&self.dir) else { return self.low };
        self.free = free;
        let low = free < self.keep;
        if low != self.low {
            if low {
                warn!(dir = %self.dir.display(), free, keep = self.keep,
                    "free space below --keep-free-space-bytes: refusing writes (NOTREADONLY) until there is room");
            } else {
                info!(dir = %self.dir.display(), free, "free space is back: taking writes again");
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
