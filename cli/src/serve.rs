//! `testkeeper serve`: flags to a `ServerConfig`, then run until a signal.

use std::io::Write;
use std::net::SocketAddr;

use clap::Args;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::{Flavor, ZookeeperVersion};
use testkeeper_server::core::unknown_name::UnknownName;
use testkeeper_server::embed::TestKeeper;
use testkeeper_server::faults::Rule;
use testkeeper_server::features::FeatureFlags;
use tracing::info;

/// Flags of `serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on for clients: HOST:PORT, or a bare PORT on 127.0.0.1; port 0 picks
    /// a free port (the real one is printed). Default 127.0.0.1:9181 (or, with
    /// --cluster-config, the file's listen_host and tcp_port).
    #[arg(long, value_name = "ADDR", value_parser = crate::addr::listen)]
    pub listen: Option<SocketAddr>,
    /// Which server to imitate: keeper (ClickHouse Keeper) or zookeeper (Apache ZooKeeper 3.8).
    #[arg(long, default_value = "keeper", value_parser = parse_flavor)]
    pub flavor: Flavor,
    /// With --flavor zookeeper: the release to answer as, 3.8.0 (the default, Debian's, which
    /// the golden transcript and the differential tests use) or 3.9 (a create2 in a multi
    /// returns its stat, watch events carry the change's zxid).
    #[arg(long, value_name = "VERSION", value_parser = parse_zookeeper_version)]
    pub zookeeper_version: Option<ZookeeperVersion>,
    /// Largest accepted frame in bytes (ZooKeeper's jute.maxbuffer; default 1048575).
    #[arg(long)]
    pub max_frame: Option<usize>,
    /// Lower bound of negotiated session timeouts, ms (keeper 10000, zookeeper 4000).
    #[arg(long)]
    pub min_session_timeout: Option<i32>,
    /// Upper bound of negotiated session timeouts, ms (keeper 100000, zookeeper 40000).
    #[arg(long)]
    pub max_session_timeout: Option<i32>,
    /// Session timeout for a client that asks for 0, ms (keeper 30000, zookeeper 4000);
    /// clamped into the bounds above.
    #[arg(long, value_name = "MS")]
    pub default_session_timeout: Option<i32>,
    /// How often session expiry and container/TTL collection run, ms.
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    pub tick_ms: u64,
    /// How often empty containers and expired TTL nodes are collected, ms.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub container_check_ms: u64,
    /// Comma list of allowed four-letter words, or '*' (keeper: Keeper's default list; zookeeper: all).
    #[arg(long)]
    pub four_letter_words: Option<String>,
    /// Keeper flavor: take a handshake of any length, as ZooKeeper does, instead of only
    /// Keeper's 44 or 45 bytes (a client with an empty password sends 29).
    #[arg(long)]
    pub lenient_handshake: bool,
    /// Start from another server's state, in memory: a ClickHouse Keeper snapshot file
    /// (`snapshot_N.bin.zstd`, format V5 or V6) or a directory of them (the newest is read), or
    /// a ZooKeeper data directory (`version-2/`: its newest snapshot and the txn logs after it).
    #[arg(long, value_name = "PATH", conflicts_with = "data_dir")]
    pub import: Option<std::path::PathBuf>,
    /// Super user digest, `super:<base64 sha1 of super:password>`.
    #[arg(long)]
    pub super_digest: Option<String>,
    /// Keeper feature flags to advertise: `default`, `all`, or a list like `default,check_not_exists,-multi_read`.
    #[arg(long, default_value = "default", value_parser = FeatureFlags::parse)]
    pub feature_flags: FeatureFlags,
    /// Turn the tree digest off (it is on by default).
    #[arg(long)]
    pub no_digest: bool,
    /// Recompute the whole digest after every entry and crash on a mismatch (slow; debugging).
    #[arg(long)]
    pub digest_check_on_commit: bool,
    /// Seed for every random choice; printed at start.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fault rule, repeatable: KIND[:key=value,...]. Kinds: drop-response, drop-request,
    /// error (code=), delay (ms=, jitter=), reset, expire-session, blackhole, refuse (new
    /// connections). Keys: op, path (glob), session, nth, prob, count. Example: 'drop-response:op=create,path=/locks/*,count=1'.
    /// prob= draws from --seed, so a run replays with the same seed. See docs/faults.md.
    #[arg(long = "fault", value_name = "RULE", value_parser = parse_fault)]
    pub faults: Vec<String>,
    /// Serve the admin HTTP endpoint here (/ready, /metrics, /api/v1/commands/{4lw},
    /// /api/v1/faults, /api/v1/sessions, /api/v1/reset; `testkeeper faults` drives it);
    /// port 0 picks a free port (the real one is printed on stderr).
    #[arg(long, value_name = "ADDR", value_parser = crate::addr::listen)]
    pub http: Option<SocketAddr>,
    /// Threads that serve clients, and on a cluster node its peers and, in memory, its Raft
    /// driver (tokio workers; default: one per core, or for a cluster whose members all have
    /// loopback addresses, the cores divided among them). See docs/cluster.md, "Threads".
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Microseconds a worker spins before it sleeps on a loaded server (most of its recent
    /// parks found another worker running), so that the next request finds it awake; 0 turns
    /// it off. Not with `--threads 1`. See docs/performance.md, "Pipelined".
    #[arg(long, value_name = "US", default_value_t = 20, value_parser = clap::value_parser!(u16).range(0..=1000))]
    pub park_spin_us: u16,
    #[command(flatten)]
    pub storage: crate::serve_storage::StorageArgs,
    #[command(flatten)]
    pub limits: crate::serve_limits::LimitArgs,
    #[command(flatten)]
    pub cluster: crate::serve_cluster::ClusterArgs,
}

/// Where `serve` listens for clients when neither `--listen` nor a config file says.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 9181));

/// Checks a `--fault` rule at flag-parsing time, so a typo stops the server from starting.
fn parse_fault(s: &str) -> Result<String, String> {
    Rule::parse(s).map(|_| s.to_string()).map_err(|e| e.to_string())
}

fn parse_zookeeper_version(s: &str) -> Result<ZookeeperVersion, UnknownName> {
    s.parse()
}

pub(crate) fn parse_flavor(s: &str) -> Result<Flavor, UnknownName> {
    s.parse()
}

impl ServeArgs {
    /// The configuration these flags describe.
    ///
    /// # Errors
    /// A message naming the flag when values are inconsistent.
    pub fn config(&self) -> Result<ServerConfig, String> {
        let mut base = ServerConfig::new(self.flavor);
        base.listen = DEFAULT_LISTEN;
        self.config_over(base)
    }

    /// The configuration these flags describe over `base` (a config file's values): a flag
    /// that is given wins, one that is not leaves `base` as it is.
    ///
    /// # Errors
    /// A message naming the flag when values are inconsistent.
    pub fn config_over(&self, base: ServerConfig) -> Result<ServerConfig, String> {
        let mut cfg = base;
        if let Some(v) = self.zookeeper_version {
            if cfg.flavor != Flavor::Zookeeper {
                return Err(format!(
                    "--zookeeper-version {v} applies to --flavor zookeeper; the keeper flavor answers as ClickHouse Keeper"
                ));
            }
            cfg.zookeeper_version = v;
        }
        if let Some(l) = self.listen {
            cfg.listen = l;
        }
        if let Some(m) = self.max_frame {
            if m < 64 {
                return Err(format!("--max-frame {m} is too small to hold a handshake"));
            }
            cfg.max_frame = m;
        }
        if let Some(v) = self.min_session_timeout {
            cfg.min_session_timeout_ms = v;
        }
        if let Some(v) = self.max_session_timeout {
            cfg.max_session_timeout_ms = v;
        }
        if cfg.min_session_timeout_ms <= 0 || cfg.min_session_timeout_ms > cfg.max_session_timeout_ms {
            return Err(format!(
                "--min-session-timeout ({}) must be positive and not above --max-session-timeout ({})",
                cfg.min_session_timeout_ms, cfg.max_session_timeout_ms
            ));
        }
        if let Some(v) = self.default_session_timeout {
            cfg.default_session_timeout_ms = v;
        }
        cfg.default_session_timeout_ms =
            cfg.default_session_timeout_ms.clamp(cfg.min_session_timeout_ms, cfg.max_session_timeout_ms);
        cfg.tick_ms = self.tick_ms;
        cfg.container_check_ms = self.container_check_ms;
        cfg.lenient_handshake = self.lenient_handshake;
        cfg.import = self.import.clone();
        if let Some(words) = &self.four_letter_words {
            cfg.four_letter_words =
                if words.trim() == "*" { None } else { Some(words.split(',').map(|w| w.trim().to_string()).collect()) };
        }
        if let Some(d) = &self.super_digest {
            if !d.starts_with("super:") || d.len() <= 6 {
                return Err(format!("--super-digest must look like super:<base64 sha1>, got '{d}'"));
            }
            cfg.super_digest = Some(d.clone());
        }
        cfg.feature_flags = self.feature_flags;
        cfg.digest_enabled &= !self.no_digest;
        cfg.digest_check_on_commit = self.digest_check_on_commit;
        cfg.seed = self.seed.unwrap_or_else(rand_seed);
        self.storage.apply(&mut cfg);
        self.limits.apply(&mut cfg);
        Ok(cfg)
    }
}

pub(crate) fn rand_seed() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

/// Runs the server until SIGINT or SIGTERM.
///
/// # Errors
/// Bad flags, or an address that cannot be bound.
pub async fn run(args: ServeArgs) -> Result<(), crate::exit::CliError> {
    if args.cluster.enabled() {
        if let Some(p) = &args.import {
            let why = format!("--import {} starts one server in memory; it cannot start a cluster node", p.display());
            return Err(crate::exit::CliError::Usage(why));
        }
        return crate::serve_cluster::run(args).await;
    }
    let cfg = args.config().map_err(crate::exit::CliError::Usage)?;
    // Install the handlers before announcing the address: a signal sent right after the
    // "listening" line must stop us cleanly, not kill us with the default action.
    let mut signals = Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let (flavor, seed) = (cfg.flavor, cfg.seed);
    let data_dir = cfg.data_dir.clone();
    let mut dir_lock = data_dir.as_deref().map(crate::data_dir::prepare).transpose()?;
    let mut server = TestKeeper::start(cfg).await.map_err(|e| match &data_dir {
        // Recovery errors name the file, the index and what differed; nothing was changed.
        Some(dir) if e.kind() == std::io::ErrorKind::InvalidData => crate::data_dir::refused(dir, &e),
        // An import that does not read names the file and what is wrong with it.
        None if e.kind() == std::io::ErrorKind::InvalidData => e.to_string(),
        _ => format!("cannot listen on {}: {e}", args.listen.unwrap_or(DEFAULT_LISTEN)),
    })?;
    if let Some(l) = dir_lock.as_mut() {
        l.claim();
    }
    info!(%flavor, seed, "testkeeper started (seed {seed})");
    for rule in &args.faults {
        let id = server.add_fault(rule)?;
        info!(id, rule, "fault rule installed");
    }
    if let Some(addr) = args.http {
        let bound = server.start_http(addr).await.map_err(|e| format!("cannot serve HTTP on {addr}: {e}"))?;
        info!(%bound, "http endpoint listening");
        eprintln!("testkeeper http listening on {bound}");
    }
    announce(server.addr());
    signals.wait().await;
    info!("shutting down");
    server.shutdown().await;
    Ok(())
}

/// Prints the one stdout line tests and scripts wait for: the server accepts clients now.
pub(crate) fn announce(addr: SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "testkeeper listening on {addr}");
    let _ = out.flush();
    crate::launch::log_phases();
}

/// SIGINT and SIGTERM, registered up front.
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals { int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
    }

    pub(crate) async fn wait(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}
