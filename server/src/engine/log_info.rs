//! Log and snapshot figures the engine keeps as it commits, snapshots and compacts, for
//! `lgif`, `mntr` and `/metrics`.

use testkeeper_core::state::State;

use crate::log::Log;

/// Log and snapshot figures, for `lgif`, `mntr` and `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct LogInfo {
    pub first_index: u64,
    pub last_index: u64,
    pub last_term: u64,
    pub durable_index: u64,
    pub last_snapshot_index: u64,
    pub last_snapshot_bytes: u64,
    /// How long the last snapshot held the lock (copying the state), µs.
    pub last_snapshot_copy_us: u64,
    /// How long the last snapshot took off the lock (serialize, compress, write, fsync), µs.
    pub last_snapshot_write_us: u64,
    /// How long compacting the log below the last snapshot held the lock, µs.
    pub last_compact_us: u64,
    /// Snapshot writes that failed since start (each retried after a growing wait).
    pub snapshot_failures: u64,
    /// Flushes of the log, and the time they took.
    pub syncs: u64,
    pub sync_us_total: u64,
    pub sync_us_max: u64,
}

impl LogInfo {
    pub(crate) fn of(log: &dyn Log, state: &State) -> LogInfo {
        LogInfo {
            first_index: log.first_index(),
            last_index: log.last_index(),
            last_term: log.last_term(),
            durable_index: log.last_index(),
            last_snapshot_index: if log.first_index() > 1 { log.first_index() - 1 } else { 0 },
            last_snapshot_bytes: 0,
            last_snapshot_copy_us: 0,
            last_snapshot_write_us: 0,
            last_compact_us: 0,
            snapshot_failures: 0,
            syncs: 0,
            sync_us_total: 0,
            sync_us_max: 0,
        }
        .with_applied(state.last_index())
    }

    fn with_applied(mut self, applied: u64) -> LogInfo {
        self.last_index = self.last_index.max(applied);
        self
    }
}
