//! Server configuration: everything `testkeeper serve` flags and the embedding API can set.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use crate::broken::Broken;
use crate::cluster::tap::Tap;
use crate::core::flavor::Flavor;
use crate::core::unknown_name::UnknownName;
use crate::features::FeatureFlags;
use crate::log::sim::SimDisk;

/// When an entry counts as durable (Keeper's `force_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fsync {
    /// A write is acknowledged only after a flush covers its entry (group commit).
    #[default]
    Always,
    /// A write is acknowledged once appended; the database flushes in the background.
    Never,
}

impl FromStr for Fsync {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s {
            "always" => Ok(Fsync::Always),
            "never" => Ok(Fsync::Never),
            other => Err(UnknownName::new("fsync mode", other, "'always' or 'never'")),
        }
    }
}

impl fmt::Display for Fsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fsync::Always => "always",
            Fsync::Never => "never",
        })
    }
}

/// Where a data directory's log lives.
#[derive(Debug, Clone, Default)]
pub enum LogBackend {
    /// A sled database in `DATA_DIR/log`.
    #[default]
    Sled,
    /// A simulated disk (tests): its fsync boundary is known, and a crash loses what is past it.
    Sim(SimDisk),
}

/// How the server behaves; `ServerConfig::new(flavor)` gives each flavor's defaults.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    pub flavor: Flavor,
    /// Largest accepted frame (ZooKeeper `jute.maxbuffer`: 0xfffff).
    pub max_frame: usize,
    /// Keeper flavor: take a handshake of any length, as ZooKeeper does, instead of only
    /// Keeper's 44 or 45 bytes (`KeeperTCPHandler::isHandShake`); a client that sends an empty
    /// password (29 bytes) can then connect. No effect on the zookeeper flavor.
    pub lenient_handshake: bool,
    /// Start from another server's state instead of an empty tree: a Keeper snapshot file or
    /// directory, or a ZooKeeper data directory (`interop::import`). In memory only.
    pub import: Option<std::path::PathBuf>,
    /// Zookeeper flavor: which release to answer as (`--zookeeper-version`, default 3.8.0).
    pub zookeeper_version: crate::core::flavor::ZookeeperVersion,
    /// Session timeout bounds and the default for a client that asks for 0.
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub default_session_timeout_ms: i32,
    /// Four-letter words that are answered; `None` = all.
    pub four_letter_words: Option<Vec<String>>,
    /// `super:<base64 sha1>`: a digest that authenticates as the superuser.
    pub super_digest: Option<String>,
    /// Flags advertised in `/keeper/feature_flags` (keeper flavor).
    pub feature_flags: FeatureFlags,
    /// Keep the tree digest (on by default).
    pub digest_enabled: bool,
    /// Recompute the whole digest after every entry and crash on a mismatch (debug).
    pub digest_check_on_commit: bool,
    /// How often session expiry and container/TTL collection run.
    pub tick_ms: u64,
    /// How often empty containers and expired TTL nodes are collected.
    pub container_check_ms: u64,
    /// Log entries kept in memory for replay checks (0 = none).
    pub retain_log: usize,
    /// Seed for everything random that must replay (fault probabilities).
    pub seed: u64,
    /// Where the log and snapshots live; `None` = in memory.
    pub data_dir: Option<PathBuf>,
    /// With a data dir: when an entry counts as durable.
    pub fsync: Fsync,
    /// With a data dir: which log backend.
    pub log_backend: LogBackend,
    /// Entries between snapshots (Keeper's `snapshot_distance`).
    pub snapshot_distance: u64,
    /// Snapshots kept on disk (Keeper's `snapshots_to_keep`).
    pub snapshots_to_keep: usize,
    /// Entries kept in the log below the newest snapshot (Keeper's `reserved_log_items`).
    pub reserved_log_items: u64,
    /// With a data dir: free bytes kept on its filesystem; below, writes are refused with
    /// NOTREADONLY until there is room again (0: no margin; `engine/disk.rs`).
    pub keep_free_space_bytes: u64,
    /// A deliberately broken behaviour, for the chaos checkers' self-test only
    /// (`crate::broken`); `None` in every real use.
    pub broken: Option<Broken>,
    /// A cluster's recorder of applied entries, roles and loads, for white-box checks.
    pub tap: Option<Tap>,
    /// Connection limits and timeouts (`--max-connections`, `--handshake-timeout-ms`, ...).
    pub limits: ConnLimits,
}

/// The default of `--keep-free-space-bytes`: 16 MiB, room for a few seconds of writes and a
/// small snapshot, and far below what a CI machine has free.
pub const DEFAULT_KEEP_FREE_SPACE_BYTES: u64 = 16 << 20;

/// What bounds a connection before and while it is served: how many there may be, how long
/// one may take to say who it is, and how much it may leave unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Open client connections at most (0: no limit); an extra one is closed at once.
    pub max_connections: usize,
    /// Open client connections from one IP address at most (0: no limit). The zookeeper
    /// flavor has ZooKeeper's `maxClientCnxns`, 60; the keeper flavor none, as ClickHouse
    /// Keeper has no per-address cap, and everything in a test runs on 127.0.0.1
    /// ([`ConnLimits::for_flavor`]).
    pub max_connections_per_ip: usize,
    /// A connection must send its handshake (or a four-letter word) within this long of being
    /// accepted, however it trickles its bytes (0: no bound).
    pub handshake_timeout_ms: u64,
    /// A connection without a session that sends nothing for this long is closed (ZooKeeper's
    /// `zookeeper.nio.sessionlessCnxnTimeout`, 10000 ms; 0: no bound). Once a session is
    /// bound, its own timeout takes over.
    pub sessionless_idle_ms: u64,
    /// Reply bytes a connection may have queued and unwritten before the server stops reading
    /// its requests (0: no limit).
    pub reply_queue_bytes: usize,
}

impl ConnLimits {
    /// The defaults of `flavor`: [`ConnLimits::default`] (ZooKeeper's), without the per-IP cap
    /// for the keeper flavor.
    pub fn for_flavor(flavor: Flavor) -> ConnLimits {
        match flavor {
            Flavor::Keeper => ConnLimits { max_connections_per_ip: 0, ..ConnLimits::default() },
            Flavor::Zookeeper => ConnLimits::default(),
        }
    }
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            max_connections: 0,
            max_connections_per_ip: 60,
            handshake_timeout_ms: 10_000,
            sessionless_idle_ms: 10_000,
            reply_queue_bytes: 4 << 20,
        }
    }
}

impl ServerConfig {
    /// Defaults of `flavor`, listening on a free loopback port (127.0.0.1:0), so tests that
    /// embed a server never collide; `testkeeper serve` defaults to 127.0.0.1:9181 itself.
    pub fn new(flavor: Flavor) -> ServerConfig {
        let keeper = flavor == Flavor::Keeper;
        ServerConfig {
            listen: SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
            flavor,
            max_frame: testkeeper_wire::frame::DEFAULT_MAX_FRAME,
            lenient_handshake: false,
            import: None,
            zookeeper_version: crate::core::flavor::ZookeeperVersion::default(),
            min_session_timeout_ms: if keeper { 10_000 } else { 4_000 },
            max_session_timeout_ms: if keeper { 100_000 } else { 40_000 },
            default_session_timeout_ms: if keeper { 30_000 } else { 4_000 },
            four_letter_words: if keeper {
                Some(KEEPER_DEFAULT_4LW.split(',').map(String::from).collect())
            } else {
                None
            },
            super_digest: None,
            feature_flags: FeatureFlags::keeper_default(),
            digest_enabled: true,
            digest_check_on_commit: false,
            tick_ms: 50,
            container_check_ms: 1_000,
            retain_log: 0,
            seed: 0,
            data_dir: None,
            fsync: Fsync::Always,
            log_backend: LogBackend::Sled,
            snapshot_distance: 100_000,
            snapshots_to_keep: 3,
            reserved_log_items: 100_000,
            keep_free_space_bytes: DEFAULT_KEEP_FREE_SPACE_BYTES,
            broken: None,
            tap: None,
            limits: ConnLimits::for_flavor(flavor),
        }
    }

    /// Negotiates a client's requested session timeout.
    pub fn negotiate_timeout(&self, requested: i32) -> i32 {
        let t = if requested == 0 { self.default_session_timeout_ms } else { requested };
        t.clamp(self.min_session_timeout_ms, self.max_session_timeout_ms)
    }

    /// Whether a four-letter word is allowed.
    pub fn allows_4lw(&self, word: &str) -> bool {
        self.four_letter_words.as_ref().is_none_or(|l| l.iter().any(|w| w == word || w == "*"))
    }
}

/// ClickHouse Keeper's default `four_letter_word_allow_list` (CoordinationSettings.cpp).
pub const KEEPER_DEFAULT_4LW: &str =
    "conf,cons,crst,envi,ruok,srst,srvr,stat,wchs,dirs,mntr,isro,rcvr,apiv,csnp,lgif,rqld,rclc,clrs,ftfl,ydld,pfev";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_clamp_per_flavor() {
        let k = ServerConfig::new(Flavor::Keeper);
        assert_eq!(
            (k.negotiate_timeout(5000), k.negotiate_timeout(60000), k.negotiate_timeout(0)),
            (10000, 60000, 30000)
        );
        let z = ServerConfig::new(Flavor::Zookeeper);
        assert_eq!(
            (z.negotiate_timeout(5000), z.negotiate_timeout(60000), z.negotiate_timeout(0)),
            (5000, 40000, 4000)
        );
        assert!(k.allows_4lw("ruok") && !k.allows_4lw("dump") && z.allows_4lw("dump"));
    }

    #[test]
    fn embedding_defaults_to_a_free_loopback_port() {
        let c = ServerConfig::new(Flavor::Keeper);
        assert!(c.listen.ip().is_loopback() && c.listen.port() == 0, "{}", c.listen);
    }
}
