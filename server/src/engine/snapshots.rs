//! The engine's side of snapshots: when one is due (every `snapshot_distance` committed
//! entries, or `csnp`), the committed state is copied under the lock and written by the
//! snapshotter's thread; when the file is durable the log is compacted below it.

use std::time::Instant;

use tracing::{error, info};

use super::Engine;

impl Engine {
    /// Starts a snapshot if one is due.
    pub(crate) fn maybe_snapshot(&mut self) {
        if self.snapshotter.as_ref().is_some_and(|s| s.due(self.state.last_index())) {
            self.start_snapshot();
        }
    }

    /// Starts a snapshot of the committed state now (`csnp`); returns its index, or `None`
    /// in memory or while one is being written.
    pub fn request_snapshot(&mut self) -> Option<u64> {
        if self.snapshotter.as_ref().is_none_or(|s| s.busy()) {
            return None;
        }
        Some(self.start_snapshot())
    }

    fn start_snapshot(&mut self) -> u64 {
        let started = Instant::now();
        let copy = self.state.clone();
        self.log_info.last_snapshot_copy_us = started.elapsed().as_micros() as u64;
        let index = copy.last_index();
        self.snapshotter.as_mut().expect("checked by the callers").start(copy);
        index
    }

    /// Picks up a finished snapshot (waiting for it with `wait`) and compacts the log.
    pub(crate) fn poll_snapshot(&mut self, wait: bool) {
        let Some(s) = self.snapshotter.as_mut() else { return };
        match s.poll(wait) {
            None => {}
            Some(Ok(t)) => {
                let below = s.compact_below(t.index);
                let file = t.path.as_ref().map_or_else(|| "(memory)".to_string(), |p| p.display().to_string());
                info!(index = t.index, bytes = t.bytes, write_ms = t.write_us / 1000, %file, "snapshot written");
                self.log_info.last_snapshot_index = t.index;
                self.log_info.last_snapshot_bytes = t.bytes;
                self.log_info.last_snapshot_write_us = t.write_us;
                let Some(log) = self.seq.own_log() else {
                    // A cluster node's log is the driver's: it compacts, and offers the body.
                    if let (Some(r), Some(body)) = (self.seq.replica(), t.body) {
                        r.board.snapshot_taken(crate::cluster::SnapRef { index: t.index, term: t.term, body }, below);
                    }
                    return;
                };
                let started = Instant::now();
                if let Err(e) = log.compact_to(below) {
                    error!(error = %e, "compacting the log below the snapshot failed; it stays whole");
                }
                self.log_info.last_compact_us = started.elapsed().as_micros() as u64;
                self.log_info.first_index = log.first_index();
            }
            Some(Err(e)) => {
                self.log_info.snapshot_failures = s.failures;
                let retry_in =
                    s.retry_at().map_or(0, |t| t.saturating_duration_since(tokio::time::Instant::now()).as_millis());
                error!(error = %e, failures = s.failures, retry_in_ms = retry_in as u64, "writing a snapshot failed; the log is kept whole, and the next attempt waits");
            }
        }
    }
}
