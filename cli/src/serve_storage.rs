//! `testkeeper serve`'s data-directory flags: where the log and snapshots live and when a write
//! counts as durable. Without `--data-dir` the server is in memory, as before.

use std::path::PathBuf;

use clap::Args;
use testkeeper_server::config::{Fsync, ServerConfig};

/// Durability flags of `serve`.
#[derive(Args, Debug, Clone)]
pub struct StorageArgs {
    /// Keep the log and snapshots in DIR (created if missing) and recover from it at start;
    /// absent: in memory.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// With --data-dir: `always` acknowledges a write only after its entry is flushed (group
    /// commit; Keeper's force_sync), `never` once it is appended.
    #[arg(long, value_name = "MODE", requires = "data_dir", value_parser = parse_fsync)]
    pub fsync: Option<Fsync>,
    /// With --data-dir: committed entries between snapshots (Keeper's snapshot_distance).
    #[arg(long, value_name = "N", requires = "data_dir", value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshot_distance: Option<u64>,
    /// With --data-dir: snapshot files kept (Keeper's snapshots_to_keep).
    #[arg(long, value_name = "N", requires = "data_dir", value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshots_to_keep: Option<u64>,
    /// With --data-dir: log entries kept below the newest snapshot (Keeper's reserved_log_items).
    #[arg(long, value_name = "N", requires = "data_dir")]
    pub reserved_log_items: Option<u64>,
    /// With --data-dir: free bytes to keep on its filesystem; below, writes are refused with
    /// NOTREADONLY (-119) and reads go on, until there is room again (0: no margin; default
    /// 16 MiB).
    #[arg(long, value_name = "BYTES", requires = "data_dir")]
    pub keep_free_space_bytes: Option<u64>,
}

fn parse_fsync(s: &str) -> Result<Fsync, testkeeper_server::core::unknown_name::UnknownName> {
    s.parse()
}

impl StorageArgs {
    /// Writes these flags into `cfg`.
    pub fn apply(&self, cfg: &mut ServerConfig) {
        cfg.data_dir.clone_from(&self.data_dir);
        if let Some(f) = self.fsync {
            cfg.fsync = f;
        }
        if let Some(n) = self.snapshot_distance {
            cfg.snapshot_distance = n;
        }
        if let Some(n) = self.snapshots_to_keep {
            cfg.snapshots_to_keep = n as usize;
        }
        if let Some(n) = self.reserved_log_items {
            cfg.reserved_log_items = n;
        }
        if let Some(n) = self.keep_free_space_bytes {
            cfg.keep_free_space_bytes = n;
        }
    }
}
