//! `conf`: the server's configuration, in ZooKeeper's key=value form for the zookeeper flavor
//! and in Keeper's `KeeperConfigurationAndSettings::dump` order for the keeper flavor.

use std::fmt::Write as _;

use crate::config::ServerConfig;
use crate::engine::Engine;

pub(super) fn conf(e: &Engine) -> String {
    let c = &e.cfg;
    if c.flavor == crate::core::flavor::Flavor::Keeper {
        return keeper_conf(e);
    }
    format!(
        "clientPort={}\nflavor={}\nmaxClientCnxns={}\nminSessionTimeout={}\nmaxSessionTimeout={}\nmax_frame={}\ndigest_enabled={}\nfour_letter_word_allow_list={}\n",
        c.listen.port(),
        c.flavor,
        c.limits.max_connections_per_ip,
        c.min_session_timeout_ms,
        c.max_session_timeout_ms,
        c.max_frame,
        c.digest_enabled,
        c.four_letter_words.as_ref().map_or("*".to_string(), |l| l.join(","))
    )
}

/// Keeper's `conf`: the keys, order and formats of `KeeperConfigurationAndSettings::dump`
/// (ClickHouse `src/Coordination/CoordinationSettings.cpp`). The values are this server's
/// where it has the setting (id, port, allow list, session timeouts, snapshot and log
/// settings, fsync) and Keeper's defaults (`LIST_OF_COORDINATION_SETTINGS`) for the tuning
/// knobs of Keeper's own machinery that testkeeper does not have.
fn keeper_conf(e: &Engine) -> String {
    let c = &e.cfg;
    let id = e.seq.replica().map_or(1, |r| r.link.node);
    let allow = c.four_letter_words.as_ref().map_or("*".to_string(), |l| l.join(","));
    let force_sync = c.data_dir.is_some() && c.fsync == crate::config::Fsync::Always;
    let lines: [(&str, String); 39] = [
        ("server_id", id.to_string()),
        ("enable_ipv6", "true".into()),
        ("tcp_port", c.listen.port().to_string()),
        ("four_letter_word_allow_list", allow),
        ("max_requests_batch_size", "100".into()),
        ("min_session_timeout_ms", c.min_session_timeout_ms.to_string()),
        ("session_timeout_ms", c.max_session_timeout_ms.to_string()),
        ("operation_timeout_ms", "10000".into()),
        ("dead_session_check_period_ms", "500".into()),
        ("heart_beat_interval_ms", "500".into()),
        ("election_timeout_lower_bound_ms", "1000".into()),
        ("election_timeout_upper_bound_ms", "2000".into()),
        ("leadership_expiry_ms", "0".into()),
        ("reserved_log_items", c.reserved_log_items.to_string()),
        ("snapshot_distance", c.snapshot_distance.to_string()),
        ("auto_forwarding", "true".into()),
        ("shutdown_timeout", "5000".into()),
        ("startup_timeout", "180000".into()),
        ("raft_logs_level", "information".into()),
        ("snapshots_to_keep", c.snapshots_to_keep.to_string()),
        ("rotate_log_storage_interval", "100000".into()),
        ("stale_log_gap", "10000".into()),
        ("fresh_log_gap", "200".into()),
        ("max_requests_batch_size", "100".into()),
        ("max_requests_batch_bytes_size", "102400".into()),
        ("max_flush_batch_size", "1000".into()),
        ("max_request_queue_size", "100000".into()),
        ("max_requests_quick_batch_size", "100".into()),
        ("quorum_reads", "false".into()),
        ("force_sync", force_sync.to_string()),
        ("compress_logs", "false".into()),
        ("compress_snapshots_with_zstd_format", "true".into()),
        ("configuration_change_tries_count", "20".into()),
        ("raft_limits_reconnect_limit", "50".into()),
        ("async_replication", "false".into()),
        ("latest_logs_cache_size_threshold", (1u64 << 30).to_string()),
        ("commit_logs_cache_size_threshold", (500u64 << 20).to_string()),
        ("disk_move_retries_wait_ms", "1000".into()),
        ("disk_move_retries_during_init", "100".into()),
    ];
    let mut s = String::new();
    for (k, v) in lines {
        let _ = writeln!(s, "{k}={v}");
        if k == "four_letter_word_allow_list" {
            storage_lines(&mut s, c);
        }
    }
    for (k, v) in [
        ("log_slow_total_threshold_ms", "5000"),
        ("log_slow_cpu_threshold_ms", "100"),
        ("log_slow_connection_operation_threshold_ms", "1000"),
    ] {
        let _ = writeln!(s, "{k}={v}");
    }
    s
}

/// Keeper prints where its log and snapshots live right after the allow list
/// (`log_storage_path`, `log_storage_disk`, `snapshot_storage_path`, `snapshot_storage_disk`;
/// ClickHouse's test_keeper_four_word_command asserts them). A server with `--data-dir` has both
/// on its local disk, as Keeper's `LocalLogDisk` and `LocalSnapshotDisk`; one in memory has no
/// storage, and prints none of the four.
fn storage_lines(s: &mut String, c: &ServerConfig) {
    let Some(dir) = &c.data_dir else { return };
    let _ = writeln!(s, "log_storage_path={}", dir.join("log").display());
    let _ = writeln!(s, "log_storage_disk=LocalLogDisk");
    let _ = writeln!(s, "snapshot_storage_path={}", crate::storage::snapshot_dir(dir).display());
    let _ = writeln!(s, "snapshot_storage_disk=LocalSnapshotDisk");
}
