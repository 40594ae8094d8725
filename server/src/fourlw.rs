//! Four-letter words: the text answers of `ruok`, `mntr`, `srvr`... in each flavor's format
//! (ZooKeeper's `FourLetterCommands`, Keeper's `FourLetterCommand.cpp`).
//!
//! # Layout
//! - this file: the word lists, the allow-list check and the words that read counters.
//! - `dumps`: `cons`, `stat`'s clients and the `wch*` watch dumps.
//! - `cluster`: a cluster node's role, followers, Raft log, leadership requests, and the
//!   answer of a node that is not serving.

mod cluster;
mod conf;
mod dumps;

pub use cluster::{readiness, request_leader, server_state, yield_leadership};

use std::fmt::Write as _;
use std::net::SocketAddr;

use crate::core::digest::DIGEST_VERSION;
use crate::core::flavor::Flavor;
use crate::engine::Engine;
use crate::engine::Shared;
use testkeeper_wire::OpCode;

/// Version string both flavors report; kazoo parses the digits of `zookeeper.version=`.
pub const ZK_VERSION: &str = "3.8.0-testkeeper";

/// The version the zookeeper flavor reports with `--zookeeper-version 3.9` (3.9.0 is the first
/// release with both of the 3.9 changes testkeeper reproduces; docs/flavors.md).
pub const ZK_39_VERSION: &str = "3.9.0-testkeeper";

/// The ZooKeeper version line this server reports (srvr, stat, mntr, envi).
fn zk_version(cfg: &crate::config::ServerConfig) -> &'static str {
    match cfg.zookeeper_version {
        crate::core::flavor::ZookeeperVersion::V3_8_0 => ZK_VERSION,
        crate::core::flavor::ZookeeperVersion::V3_9 => ZK_39_VERSION,
    }
}
/// What the keeper flavor reports as its ClickHouse Keeper version.
pub const KEEPER_VERSION: &str = concat!("v26.6.1.1-testkeeper-", env!("CARGO_PKG_VERSION"));

const ZK_WORDS: &[&str] = &[
    "ruok", "stat", "srvr", "conf", "cons", "crst", "dump", "envi", "srst", "wchc", "wchp", "wchs", "mntr", "isro",
    "dirs",
];
const KEEPER_WORDS: &[&str] = &[
    "ruok", "mntr", "srvr", "stat", "srst", "conf", "cons", "crst", "envi", "dirs", "isro", "wchs", "wchc", "wchp",
    "dump", "csnp", "lgif", "rqld", "rclc", "clrs", "ftfl", "ydld", "pfev", "lgrq", "rcfg", "rcvr", "apiv",
];

/// Whether the flavor's server knows `word` at all.
pub fn is_known(flavor: Flavor, word: &str) -> bool {
    match flavor {
        Flavor::Zookeeper => ZK_WORDS.contains(&word),
        Flavor::Keeper => KEEPER_WORDS.contains(&word),
    }
}

/// The answer to `word`, or `None` to close silently (Keeper's way with words it does not allow).
/// `asker` is the connection that sent the word over TCP (`None` over HTTP); ZooKeeper lists
/// it in `cons` and `stat`.
pub fn answer(shared: &Shared, word: &str, asker: Option<SocketAddr>) -> Option<String> {
    let cfg = &shared.cfg;
    if !cfg.allows_4lw(word) {
        return match cfg.flavor {
            Flavor::Zookeeper => Some(format!("{word} is not executed because it is not in the whitelist.\n")),
            Flavor::Keeper => None,
        };
    }
    let mut e = shared.engine();
    if let Some(msg) = cluster::not_serving(&e, word) {
        return Some(msg.into());
    }
    Some(text(&mut e, word, asker))
}

fn text(e: &mut Engine, word: &str, asker: Option<SocketAddr>) -> String {
    let keeper = e.cfg.flavor == Flavor::Keeper;
    match word {
        "ruok" => "imok".into(),
        "mntr" => mntr(e),
        "srvr" => srvr(e, false, None),
        "stat" => srvr(e, true, asker),
        "srst" => {
            e.stats.reset();
            "Server stats reset.\n".into()
        }
        "crst" => {
            for c in e.conns.values_mut() {
                c.reset_stats();
            }
            "Connection stats reset.\n".into()
        }
        "conf" => conf::conf(e),
        "cons" => dumps::cons(e, asker),
        "envi" => envi(keeper, zk_version(&e.cfg)),
        "dirs" => dirs(e),
        "isro" if cluster::not_serving(e, "mntr").is_some() && !keeper => "null".into(),
        "isro" => "rw".into(),
        "wchs" => dumps::wchs(e),
        "wchc" => dumps::wch(e, false),
        "wchp" => dumps::wch(e, true),
        "dump" => dump(e),
        "apiv" => e.cfg.feature_flags.api_version().to_string(),
        "ftfl" => e.cfg.feature_flags.ftfl(),
        "lgif" => lgif(e),
        "csnp" => match e.request_snapshot() {
            Some(index) => index.to_string(),
            None => "Failed to schedule snapshot creation task.".into(),
        },
        "rqld" if cluster::request_leader(e) => "Sent leadership request to leader.".into(),
        "rqld" => "Failed to send leadership request to leader.".into(),
        "ydld" => {
            cluster::yield_leadership(e);
            "Sent yield leadership request to leader.".into()
        }
        "rclc" | "clrs" | "rcvr" => "ok".into(),
        "lgrq" => "disabled".into(),
        "pfev" => pfev(e),
        "rcfg" => "Reconfiguration is not supported by testkeeper".into(),
        _ => String::new(),
    }
}

/// Keeper's `pfev` (`ProfileEventsCommand`): one `name\tvalue\tdescription` line per event.
/// Of Keeper's list (`KeeperProfileEvents.cpp`) only the request and packet counters have a
/// meaning here; the file, network and system events are left out rather than made up.
fn pfev(e: &Engine) -> String {
    use testkeeper_wire::opcode::KeeperEvent;
    let requests: u64 = e.stats.requests_by_op.values().sum();
    let mut rows = vec![
        ("KeeperPacketsSent", e.stats.packets_sent, "Packets sent by keeper server"),
        ("KeeperPacketsReceived", e.stats.packets_received, "Packets received by keeper server"),
        ("KeeperRequestTotal", requests, "Total requests number on keeper server"),
    ];
    // Each request counter sums the ops the opcode table files under it.
    for event in KeeperEvent::ALL {
        let n = (OpCode::ALL.iter().filter(|op| op.keeper_event() == event))
            .filter_map(|op| e.stats.requests_by_op.get(op.name()))
            .sum();
        let (name, doc) = event.describe();
        rows.push((name, n, doc));
    }
    rows.iter().map(|(name, n, doc)| format!("{name}\t{n}\t{doc}\n")).collect()
}

fn mntr(e: &Engine) -> String {
    let keeper = e.cfg.flavor == Flavor::Keeper;
    let (min, avg, max) = e.stats.latency_ms();
    let version = if keeper { KEEPER_VERSION } else { zk_version(&e.cfg) };
    let mut s = String::new();
    kv(&mut s, "version", &version);
    kv(&mut s, "avg_latency", &avg);
    kv(&mut s, "max_latency", &max);
    kv(&mut s, "min_latency", &min);
    kv(&mut s, "packets_received", &e.stats.packets_received);
    kv(&mut s, "packets_sent", &e.stats.packets_sent);
    kv(&mut s, "num_alive_connections", &e.conns.len());
    kv(&mut s, "outstanding_requests", &0);
    kv(&mut s, "server_state", &cluster::server_state(e));
    kv(&mut s, "znode_count", &e.state.tree().len());
    kv(&mut s, "watch_count", &e.watches.count());
    kv(&mut s, "ephemerals_count", &e.state.tree().ephemeral_count());
    kv(&mut s, "approximate_data_size", &e.state.tree().approximate_data_size());
    if keeper {
        kv(&mut s, "key_arena_size", &0);
        kv(&mut s, "latest_snapshot_size", &e.log_info.last_snapshot_bytes);
    }
    let (open, max) = file_descriptors();
    kv(&mut s, "open_file_descriptor_count", &open);
    kv(&mut s, "max_file_descriptor_count", &max);
    cluster::mntr_lines(e, &mut s);
    kv(&mut s, "nodes_digest", &e.state.tree().digest());
    // testkeeper's own: the log index the digest above is at (both read under one lock), so
    // replicas of a cluster can be compared at the same index.
    kv(&mut s, "last_applied_index", &e.state.last_index());
    kv(&mut s, "digest_version", &if e.cfg.digest_enabled { DIGEST_VERSION } else { 0 });
    kv(&mut s, "zxid", &format_args!("0x{:x}", e.state.zxid()));
    // testkeeper's own: the log and snapshots, and ZooKeeper's fsync-time summary names.
    let l = &e.log_info;
    kv(&mut s, "last_log_index", &l.last_index);
    kv(&mut s, "last_snapshot_index", &l.last_snapshot_index);
    kv(&mut s, "last_snapshot_copy_us", &l.last_snapshot_copy_us);
    kv(&mut s, "last_snapshot_write_us", &l.last_snapshot_write_us);
    kv(&mut s, "last_log_compact_us", &l.last_compact_us);
    kv(&mut s, "snapshot_failures", &l.snapshot_failures);
    if let Some(d) = &e.disk {
        // testkeeper's own: whether writes are refused for want of disk space, and how many were.
        // A cluster node's driver reads a guard of its own every tick.
        let low = d.is_low() || e.seq.replica().is_some_and(|r| r.board.disk_low());
        kv(&mut s, "disk_space_low", &u8::from(low));
        kv(&mut s, "writes_refused_disk_space", &d.refused);
    }
    kv(&mut s, "cnt_fsynctime", &l.syncs);
    kv(
        &mut s,
        "avg_fsynctime",
        &format_args!("{:.3}", if l.syncs == 0 { 0.0 } else { l.sync_us_total as f64 / l.syncs as f64 / 1000.0 }),
    );
    kv(&mut s, "max_fsynctime", &format_args!("{:.3}", l.sync_us_max as f64 / 1000.0));
    s
}

/// One `mntr` line.
fn kv(s: &mut String, k: &str, v: &dyn std::fmt::Display) {
    let _ = writeln!(s, "zk_{k}\t{v}");
}

/// `lgif`, as Keeper's `LogInfoCommand` prints it, first_log_term included: Keeper prints the
/// first log *index* there (FourLetterCommand.cpp), and so do we. A cluster node reads its Raft
/// log (the leader's commit as this node last heard it, the commit index it aims for); a
/// standalone server its own log, where all three commit indexes are the applied one. There is
/// no log cache: its four lines are 0.
fn lgif(e: &Engine) -> String {
    let applied = e.state.last_index();
    let l = &e.log_info;
    let (first, last, last_term, leader_commit, target, snapshot) = match e.raft_info() {
        Some(i) => (i.first_index, i.last_index, i.last_term, i.leader_commit, i.commit, i.snapshot_index),
        None => (l.first_index, l.last_index, l.last_term, applied, applied, l.last_snapshot_index),
    };
    let rows: [(&str, u64); 12] = [
        ("first_log_idx", first),
        ("first_log_term", first),
        ("last_log_idx", last),
        ("last_log_term", last_term),
        ("last_committed_log_idx", applied),
        ("leader_committed_log_idx", leader_commit),
        ("target_committed_log_idx", target),
        ("last_snapshot_idx", snapshot),
        ("latest_logs_cache_entries", 0),
        ("latest_logs_cache_size", 0),
        ("commit_logs_cache_entries", 0),
        ("commit_logs_cache_size", 0),
    ];
    rows.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect()
}

/// `dirs`: bytes under the data directory's snapshots and log (0 in memory), under each
/// server's key names (DirsCommand in ZooKeeper, FourLetterCommand.cpp in Keeper).
fn dirs(e: &Engine) -> String {
    let size = |sub: &str| e.cfg.data_dir.as_ref().map_or(0, |d| dir_size(&d.join(sub)));
    let (snap, log) = (size("snapshots"), size("log"));
    match e.cfg.flavor {
        Flavor::Keeper => format!("snapshot_dir_size: {snap}\nlog_dir_size: {log}\n"),
        Flavor::Zookeeper => format!("datadir_size: {snap}\nlogdir_size: {log}\n"),
    }
}

fn dir_size(p: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(p) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The process's open file descriptors and their limit, as both servers' `mntr` reports them
/// (0 where /proc cannot tell).
fn file_descriptors() -> (u64, u64) {
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let max = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0);
    (open, max)
}

fn srvr(e: &Engine, with_clients: bool, asker: Option<SocketAddr>) -> String {
    let keeper = e.cfg.flavor == Flavor::Keeper;
    let (min, avg, max) = e.stats.latency_ms();
    let mut s = if keeper {
        format!("ClickHouse Keeper version: {KEEPER_VERSION}\n")
    } else {
        format!("Zookeeper version: {}, built on 01/01/2026 00:00 GMT\n", zk_version(&e.cfg))
    };
    if with_clients {
        s.push_str(&dumps::clients(e, asker));
    }
    let _ = write!(
        s,
        "Latency min/avg/max: {min}/{avg}/{max}\nReceived: {}\nSent: {}\nConnections: {}\nOutstanding: 0\nZxid: 0x{:x}\nMode: {}\nNode count: {}\n",
        e.stats.packets_received,
        e.stats.packets_sent,
        e.conns.len(),
        e.state.zxid(),
        cluster::server_state(e),
        e.state.tree().len()
    );
    s
}

fn envi(keeper: bool, zk_version: &str) -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    let mut s = String::from("Environment:\n");
    if keeper {
        let _ = writeln!(s, "clickhouse.keeper.version={KEEPER_VERSION}");
    }
    // Both flavors carry this line: kazoo's server_version() parses it.
    let _ = writeln!(s, "zookeeper.version={zk_version}, built on 01/01/2026 00:00 GMT");
    let _ = writeln!(s, "host.name={host}");
    let _ = writeln!(s, "os.name={}", std::env::consts::OS);
    let _ = writeln!(s, "os.arch={}", std::env::consts::ARCH);
    let _ = writeln!(s, "user.dir={}", std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default());
    s
}

fn dump(e: &Engine) -> String {
    let ids = e.sessions.ids();
    let mut s = format!("Sessions dump ({}):\n", ids.len());
    for id in &ids {
        let _ = writeln!(s, "0x{id:x}");
    }
    let mut owners: Vec<(i64, usize)> = e.state.tree().ephemeral_owners().collect();
    owners.sort_unstable();
    let _ = writeln!(s, "Sessions with Ephemerals ({}):", owners.len());
    for (id, _) in owners {
        let _ = writeln!(s, "0x{id:x}");
        for p in e.state.tree().ephemerals_of(id) {
            let _ = writeln!(s, "\t{p}");
        }
    }
    s
}
