//! `testkeeper serve` as one node of a replicated cluster: the cluster flags (or Keeper's XML
//! configuration, `--cluster-config`), then a `cluster::node::Node` over the TCP transport
//! until a signal, or until the node stops on a digest mismatch (then the process exits
//! non-zero with Keeper's message).

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use testkeeper_server::clock::Clock;
use testkeeper_server::cluster::net::tcp::{PeerSockets, TcpNet};
use testkeeper_server::cluster::node::Node;
use testkeeper_server::cluster::{parse_peers, ClusterConfig, NodeId};
use testkeeper_server::config::{Fsync, ServerConfig};
use tracing::{info, warn};

use crate::keeper_xml::{self, KeeperFile};
use crate::serve::{announce, ServeArgs, Signals, DEFAULT_LISTEN};

/// How often the serving loop looks whether the node stopped (a digest mismatch).
const STOP_POLL: Duration = Duration::from_millis(20);

/// Cluster flags of `serve`. Any of them makes the process one node of a cluster.
#[derive(Args, Debug, Default)]
pub struct ClusterArgs {
    /// This node's id in the cluster (Keeper's server_id); must be one of --peers.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub id: Option<u64>,
    /// Every member with its Raft address, this node included: 1=HOST:PORT,2=HOST:PORT,...
    /// (Keeper's raft_configuration, flattened).
    #[arg(long, value_name = "LIST", value_parser = parse_peer_list)]
    pub peers: Option<BTreeMap<NodeId, String>>,
    /// Where this node listens for its peers (default: its own entry in --peers).
    #[arg(long, value_name = "ADDR", value_parser = crate::addr::listen)]
    pub raft_listen: Option<SocketAddr>,
    /// Reach every peer over TCP. By default a peer on loopback is reached over a Unix socket
    /// named after its Raft address when it listens on one (Linux); this is for whatever sits
    /// between the nodes at the TCP level, such as `tc netem` on `lo` or a TCP proxy.
    #[arg(long)]
    pub raft_tcp_only: bool,
    /// A ClickHouse Keeper XML configuration (keeper_server: server_id, tcp_port,
    /// raft_configuration, coordination_settings...; see docs/cluster.md). Flags given on the
    /// command line win over it, so one file can serve every node with --id.
    #[arg(long, value_name = "FILE")]
    pub cluster_config: Option<PathBuf>,
    /// Milliseconds per Raft tick (default 20).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub raft_tick_ms: Option<u64>,
    /// Ticks without a word from the leader before a follower stands for election (default 10,
    /// or election_timeout_lower_bound_ms from the file); each node adds its own offset below
    /// half of it (at least 0-2; distinct per node, ordered by --seed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub election_ticks: Option<u64>,
    /// Ticks between the leader's heartbeats (default 2, or heart_beat_interval_ms from the
    /// file); below --election-ticks.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_ticks: Option<u64>,
    /// Keeper's stale_log_gap: the leader's mntr counts a follower as synced while it is fewer
    /// than N entries behind (default 10000, or the file's).
    #[arg(long, value_name = "N")]
    pub stale_log_gap: Option<u64>,
}

fn parse_peer_list(s: &str) -> Result<BTreeMap<NodeId, String>, String> {
    let peers = parse_peers(s).map_err(|e| e.to_string())?;
    for (id, addr) in &peers {
        check_host_port(addr).map_err(|e| format!("peer {id}: {e}"))?;
    }
    Ok(peers)
}

/// The form of `HOST:PORT`, without resolving the host (a peer's name may resolve only later,
/// as in a compose network).
fn check_host_port(addr: &str) -> Result<(), String> {
    let (host, port) = addr.rsplit_once(':').ok_or_else(|| format!("'{addr}' is not HOST:PORT"))?;
    if host.is_empty() || (host.contains(':') && !host.starts_with('[')) {
        return Err(format!("'{addr}' is not HOST:PORT (an IPv6 address needs brackets)"));
    }
    port.parse::<u16>().map(|_| ()).map_err(|_| format!("'{addr}': port '{port}' is not a number from 0 to 65535"))
}

impl ClusterArgs {
    /// Whether any cluster flag was given.
    pub fn enabled(&self) -> bool {
        self.id.is_some()
            || self.peers.is_some()
            || self.raft_listen.is_some()
            || self.raft_tcp_only
            || self.cluster_config.is_some()
            || self.raft_tick_ms.is_some()
            || self.election_ticks.is_some()
            || self.heartbeat_ticks.is_some()
            || self.stale_log_gap.is_some()
    }
}

/// Everything a cluster node is started with.
#[derive(Debug)]
pub struct Plan {
    pub cfg: ServerConfig,
    pub cc: ClusterConfig,
    pub raft_listen: SocketAddr,
    pub http: Option<SocketAddr>,
}

/// The node these flags (and the file they name) describe.
///
/// # Errors
/// A message naming the flag or the file's element: no id, no peers, an id that is not a
/// member, inconsistent timings, or a Raft address that does not resolve.
pub fn plan(args: &ServeArgs) -> Result<Plan, String> {
    let c = &args.cluster;
    let file = match &c.cluster_config {
        Some(p) => keeper_xml::load(p)?,
        None => KeeperFile::default(),
    };
    for el in &file.ignored {
        warn!(element = %el, "--cluster-config: {el} is not used by testkeeper");
    }
    let cfg = args.config_over(base_config(args, &file)?)?;
    let id = match (c.id.or(file.server_id), &file.server_id_error) {
        (Some(id), _) => id,
        (None, Some(why)) => return Err(format!("--cluster-config: {why}; or give --id")),
        (None, None) => return Err("a cluster node needs --id (or server_id in --cluster-config)".into()),
    };
    let peers = match &c.peers {
        Some(p) => p.clone(),
        None if !file.peers.is_empty() => file.peers.clone(),
        None => return Err("a cluster node needs --peers (or raft_configuration in --cluster-config)".into()),
    };
    let Some(own) = peers.get(&id) else {
        let ids: Vec<String> = peers.keys().map(u64::to_string).collect();
        return Err(format!("--id {id} is not among the peers ({})", ids.join(", ")));
    };
    let raft_listen = match c.raft_listen {
        Some(a) => a,
        None => resolve(own).map_err(|e| format!("node {id}'s raft address {e}; give --raft-listen"))?,
    };
    let mut cc = ClusterConfig::new(id, peers);
    cc.tick_ms = c.raft_tick_ms.unwrap_or(cc.tick_ms);
    let ticks = |ms: u64| ms.div_ceil(cc.tick_ms).max(1);
    let heartbeat = c.heartbeat_ticks.or(file.heartbeat_ms.map(ticks)).unwrap_or(cc.heartbeat_ticks as u64);
    let election = c.election_ticks.or(file.election_lower_ms.map(ticks)).unwrap_or(cc.election_ticks as u64);
    if let (Some(lo), Some(hi)) = (file.election_lower_ms, file.election_upper_ms) {
        if hi <= lo {
            // Keeper refuses this too (it would disable elections), and terminates.
            return Err(format!("election_timeout_upper_bound_ms ({hi}) must be above the lower bound ({lo})"));
        }
    }
    if election <= heartbeat {
        return Err(format!(
            "the election timeout ({election} ticks) must be longer than the heartbeat interval ({heartbeat} ticks): \
             see --election-ticks and --heartbeat-ticks"
        ));
    }
    (cc.heartbeat_ticks, cc.election_ticks) = (heartbeat as usize, election as usize);
    cc.seed = ClusterConfig::node_seed(cfg.seed, id);
    cc.stale_log_gap = c.stale_log_gap.or(file.stale_log_gap).unwrap_or(cc.stale_log_gap);
    let http = args.http.or(file.http_port.map(|p| SocketAddr::new(cfg.listen.ip(), p)));
    Ok(Plan { cfg, cc, raft_listen, http })
}

/// The server configuration the file describes, before the flags.
fn base_config(args: &ServeArgs, f: &KeeperFile) -> Result<ServerConfig, String> {
    let mut cfg = ServerConfig::new(args.flavor);
    cfg.listen = match (f.tcp_port, &f.listen_host) {
        (Some(port), Some(host)) => {
            resolve(&format!("{host}:{port}")).map_err(|e| format!("--cluster-config: listen_host {e}"))?
        }
        (Some(port), None) => SocketAddr::new(DEFAULT_LISTEN.ip(), port),
        (None, _) => DEFAULT_LISTEN,
    };
    if let Some(ms) = f.session_timeout_ms {
        cfg.max_session_timeout_ms = ms;
    }
    if let Some(ms) = f.min_session_timeout_ms {
        cfg.min_session_timeout_ms = ms;
    }
    if let Some(d) = f.digest_enabled {
        cfg.digest_enabled = d;
    }
    if let Some(words) = &f.four_letter_words {
        cfg.four_letter_words =
            if words.trim() == "*" { None } else { Some(words.split(',').map(|w| w.trim().to_string()).collect()) };
    }
    if let Some(s) = f.force_sync {
        cfg.fsync = if s { Fsync::Always } else { Fsync::Never };
    }
    cfg.snapshot_distance = f.snapshot_distance.unwrap_or(cfg.snapshot_distance);
    cfg.snapshots_to_keep = f.snapshots_to_keep.map_or(cfg.snapshots_to_keep, |n| n as usize);
    cfg.reserved_log_items = f.reserved_log_items.unwrap_or(cfg.reserved_log_items);
    Ok(cfg)
}

fn resolve(hp: &str) -> Result<SocketAddr, String> {
    hp.to_socket_addrs()
        .map_err(|e| format!("'{hp}' does not resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("'{hp}' resolves to no address"))
}

/// Runs one cluster node until SIGINT or SIGTERM (exit 0), or until it stops serving on a
/// digest mismatch (an error carrying Keeper's message, so the process exits non-zero).
///
/// # Errors
/// Bad flags, an address that cannot be bound, a data directory that does not recover, or
/// the node's fail-stop.
pub async fn run(args: ServeArgs) -> Result<(), crate::exit::CliError> {
    let Plan { cfg, mut cc, raft_listen, http } = plan(&args).map_err(crate::exit::CliError::Usage)?;
    let mut dir_lock = cfg.data_dir.as_deref().map(crate::data_dir::prepare).transpose()?;
    let mut signals = Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    // In memory the driver never blocks, so it runs as a task among the clients' and the
    // peers' connections: a message between them is mostly a task switch, not a thread
    // wake-up. With a data directory it waits for the disk on a thread of its own.
    if cfg.data_dir.is_none() {
        cc.driver_runtime = Some(tokio::runtime::Handle::current());
    }
    let sockets = if args.cluster.raft_tcp_only { PeerSockets::TcpOnly } else { PeerSockets::SameHostUnix };
    let (net, raft_bound) = TcpNet::bind(raft_listen, cc.peers.clone(), sockets)
        .await
        .map_err(|e| format!("cannot listen for raft peers on {raft_listen}: {e}"))?;
    let (listen, data_dir, flavor, seed) = (cfg.listen, cfg.data_dir.clone(), cfg.flavor, cfg.seed);
    let attach = net.clone();
    let node =
        Node::start(cfg, &cc, Clock::System, net, move |_, tx| attach.attach(tx)).await.map_err(
            |e| match &data_dir {
                Some(dir) if e.kind() == std::io::ErrorKind::InvalidData => crate::data_dir::refused(dir, &e),
                _ => format!("cannot start node {}: {e} (client address {listen})", cc.id),
            },
        )?;
    if let Some(l) = dir_lock.as_mut() {
        l.claim();
    }
    let peers: Vec<String> = cc.peers.iter().map(|(i, a)| format!("{i}={a}")).collect();
    info!(
        id = cc.id,
        %flavor,
        seed,
        raft = %raft_bound,
        peers = %peers.join(","),
        tick_ms = cc.tick_ms,
        election_ticks = cc.election_ticks,
        heartbeat_ticks = cc.heartbeat_ticks,
        "testkeeper cluster node started (seed {seed})"
    );
    eprintln!("testkeeper raft listening on {raft_bound}");
    for rule in &args.faults {
        let id = node.add_fault(rule)?;
        info!(id, rule, "fault rule installed");
    }
    let http = match http {
        Some(addr) => {
            let h = node.start_http(addr).await.map_err(|e| format!("cannot serve HTTP on {addr}: {e}"))?;
            info!(bound = %h.addr(), "http endpoint listening");
            eprintln!("testkeeper http listening on {}", h.addr());
            Some(h)
        }
        None => None,
    };
    announce(node.addr());
    let stopped = serve_until_stopped(&node, &mut signals).await;
    if let Some(h) = http {
        h.stop().await;
    }
    let id = node.id;
    match stopped {
        None => {
            info!("shutting down");
            node.stop(false).await;
            Ok(())
        }
        Some(why) => {
            // As Keeper terminates: nothing more is flushed from a state that diverged.
            node.stop(true).await;
            Err(format!("node {id} stopped serving: {why}").into())
        }
    }
}

/// Waits for a signal (`None`) or the node's fail-stop (`Some(why)`).
async fn serve_until_stopped(node: &Node, signals: &mut Signals) -> Option<String> {
    let mut poll = tokio::time::interval(STOP_POLL);
    loop {
        tokio::select! {
            () = signals.wait() => return None,
            _ = poll.tick() => {
                if let Some(why) = node.status().stopped {
                    return Some(why);
                }
            }
        }
    }
}

/// The node a `Plan` starts, for tests of this module.
#[cfg(test)]
fn plan_of(argv: &[&str]) -> Result<Plan, String> {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }
    let mut all = vec!["serve"];
    all.extend_from_slice(argv);
    let cli = Cli::try_parse_from(all).map_err(|e| e.to_string())?;
    plan(&cli.serve)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_make_a_node() {
        let p = plan_of(&["--id", "2", "--peers", "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003", "--seed", "5"])
            .unwrap();
        assert_eq!(p.cc.id, 2);
        assert_eq!(p.raft_listen, "127.0.0.1:7002".parse().unwrap());
        assert_eq!((p.cc.tick_ms, p.cc.election_ticks, p.cc.heartbeat_ticks), (20, 10, 2));
        assert_eq!(p.cc.seed, ClusterConfig::node_seed(5, 2));
        assert_eq!(p.cfg.listen, DEFAULT_LISTEN);
    }

    #[test]
    fn a_keeper_file_serves_every_node_and_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keeper.xml");
        std::fs::write(
            &path,
            r#"<clickhouse><keeper_server><tcp_port>9500</tcp_port><server_id>1</server_id>
            <http_control><port>9600</port></http_control>
            <coordination_settings><heart_beat_interval_ms>100</heart_beat_interval_ms>
            <election_timeout_lower_bound_ms>500</election_timeout_lower_bound_ms>
            <session_timeout_ms>20000</session_timeout_ms></coordination_settings>
            <raft_configuration>
              <server><id>1</id><hostname>127.0.0.1</hostname><port>7101</port></server>
              <server><id>2</id><hostname>127.0.0.1</hostname><port>7102</port></server>
              <server><id>3</id><hostname>localhost</hostname><port>7103</port></server>
            </raft_configuration></keeper_server></clickhouse>"#,
        )
        .unwrap();
        let f = path.to_str().unwrap();
        let p = plan_of(&["--cluster-config", f]).unwrap();
        assert_eq!(p.cc.id, 1);
        assert_eq!(p.cfg.listen, "127.0.0.1:9500".parse().unwrap());
        assert_eq!(p.http, Some("127.0.0.1:9600".parse().unwrap()));
        assert_eq!((p.cc.heartbeat_ticks, p.cc.election_ticks), (5, 25));
        assert_eq!(p.cfg.max_session_timeout_ms, 20000);
        assert_eq!(p.cc.stale_log_gap, testkeeper_server::cluster::DEFAULT_STALE_LOG_GAP);
        let p = plan_of(&[
            "--cluster-config",
            f,
            "--id",
            "3",
            "--listen",
            "0",
            "--raft-tick-ms",
            "50",
            "--stale-log-gap",
            "5",
        ])
        .unwrap();
        assert_eq!(p.cc.stale_log_gap, 5);
        assert_eq!(p.cc.id, 3);
        assert!(p.raft_listen.ip().is_loopback() && p.raft_listen.port() == 7103);
        assert_eq!(p.cfg.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!((p.cc.heartbeat_ticks, p.cc.election_ticks), (2, 10));
    }

    #[test]
    fn bad_cluster_flags_name_the_problem() {
        let peers = "1=127.0.0.1:7001,2=127.0.0.1:7002";
        for (argv, says) in [
            (vec!["--peers", peers], "needs --id"),
            (vec!["--id", "1"], "needs --peers"),
            (vec!["--id", "4", "--peers", peers], "--id 4 is not among the peers (1, 2)"),
            (vec!["--id", "1", "--peers", "1=a"], "'a' is not HOST:PORT"),
            (vec!["--id", "1", "--peers", "1=h:x"], "port 'x'"),
            (vec!["--id", "1", "--peers", "1=::1:5"], "needs brackets"),
            (vec!["--id", "0", "--peers", peers], "0 is not in 1.."),
            (vec!["--id", "1", "--peers", peers, "--election-ticks", "3", "--heartbeat-ticks", "3"], "must be longer"),
            (vec!["--id", "1", "--peers", "1=no-such-host.invalid:1"], "give --raft-listen"),
            (vec!["--cluster-config", "/nonexistent/keeper.xml"], "cannot read /nonexistent/keeper.xml"),
        ] {
            let err = plan_of(&argv).unwrap_err();
            assert!(err.contains(says), "{argv:?}: {err}");
        }
    }

    #[test]
    fn no_cluster_flag_means_standalone() {
        assert!(!ClusterArgs::default().enabled());
        assert!(ClusterArgs { raft_tick_ms: Some(5), ..ClusterArgs::default() }.enabled());
    }
}
