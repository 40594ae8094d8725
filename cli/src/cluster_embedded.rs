//! `testkeeper cluster-embedded` (hidden, for tests in other languages): an in-process
//! [`TestKeeperCluster`] of `--nodes` nodes on free loopback ports, driven line by line on
//! stdin, so a Python or Java test (or a Rust test that runs kazoo) can kill and restart the
//! leader of a cluster whose nodes share one process and one seeded in-memory network.
//!
//! stdout carries exactly one line at start, `testkeeper cluster listening on A,B,C` (the
//! connect string, node 1 first), then one answer line per command:
//!
//! | command | answer |
//! |---|---|
//! | `leader` | `leader N` once every running node knows the same leader (10 s), else `error ...` |
//! | `kill N` | `killed N` (at once: no flush, no goodbye to clients or peers) |
//! | `restart N` | `restarted N` (on its address, from its simulated disk) |
//! | `pause N` / `resume N` | `paused N` / `resumed N` (its Raft driver freezes; clients still connect) |
//! | `isolate N` / `heal` | `isolated N` / `healed` |
//! | `status` | `status` then ` N=ROLE,leader=L,term=T,applied=I,digest=D[,stopped]` per running node |
//! | `quit` (or end of input) | `bye`, after a clean shutdown |
//!
//! A line it does not understand gets `error ...` and changes nothing.

use std::io::{BufRead, Write};
use std::time::Duration;

use clap::Args;
use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::NodeId;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use tracing::info;

/// How long `leader` waits for one.
const LEADER_WAIT: Duration = Duration::from_secs(10);

/// Flags of `cluster-embedded`.
#[derive(Args, Debug)]
pub struct ClusterEmbeddedArgs {
    /// Nodes in the cluster (ids 1..=N).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=9))]
    pub nodes: u64,
    /// keeper or zookeeper.
    #[arg(long, default_value = "keeper", value_parser = |s: &str| s.parse::<Flavor>())]
    pub flavor: Flavor,
    /// Seed of every random choice (election timeouts, link faults); printed at start.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Runs the cluster until `quit` or the end of stdin.
///
/// # Errors
/// A node that cannot start (a port, a data directory).
pub async fn run(args: ClusterEmbeddedArgs) -> Result<(), crate::exit::CliError> {
    let seed = args.seed.unwrap_or_else(crate::serve::rand_seed);
    let mut cluster = TestKeeperCluster::start(args.nodes as usize, ServerConfig::new(args.flavor), seed)
        .await
        .map_err(|e| format!("cannot start the cluster: {e}"))?;
    info!(flavor = %args.flavor, seed, nodes = args.nodes, "embedded cluster started (seed {seed})");
    say(&format!("testkeeper cluster listening on {}", cluster.connect_string()));
    // stdin is read on a thread of its own (std's blocking reader), handed over line by line.
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = lines.recv().await {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "quit" {
            break;
        }
        let answer = command(&mut cluster, line).await.unwrap_or_else(|e| format!("error {e}"));
        say(&answer);
    }
    cluster.shutdown().await;
    say("bye");
    Ok(())
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn command(c: &mut TestKeeperCluster, line: &str) -> Result<String, String> {
    let mut words = line.split_whitespace();
    let verb = words.next().unwrap_or_default();
    let node = |w: Option<&str>| -> Result<NodeId, String> {
        let id: NodeId = w.and_then(|w| w.parse().ok()).ok_or_else(|| format!("'{verb}' needs a node id"))?;
        if c.ids().contains(&id) {
            Ok(id)
        } else {
            Err(format!("no node {id} (nodes are {:?})", c.ids()))
        }
    };
    Ok(match verb {
        "leader" => format!("leader {}", c.await_leader(LEADER_WAIT).await.map_err(|e| e.to_string())?),
        "kill" => {
            let id = node(words.next())?;
            c.kill(id).await;
            format!("killed {id}")
        }
        "restart" => {
            let id = node(words.next())?;
            c.restart(id).await.map_err(|e| format!("node {id} does not start: {e}"))?;
            format!("restarted {id}")
        }
        "pause" => {
            let id = node(words.next())?;
            c.pause(id);
            format!("paused {id}")
        }
        "resume" => {
            let id = node(words.next())?;
            c.resume(id);
            format!("resumed {id}")
        }
        "isolate" => {
            let id = node(words.next())?;
            c.isolate(id);
            format!("isolated {id}")
        }
        "heal" => {
            c.heal();
            "healed".into()
        }
        "status" => {
            let mut s = String::from("status");
            for st in c.statuses() {
                let digest = c.node(st.id).map_or(0, |n| n.digest());
                s.push_str(&format!(
                    " {}={},leader={},term={},applied={},digest={digest}{}",
                    st.id,
                    st.role.name(),
                    st.leader,
                    st.term,
                    st.applied,
                    if st.stopped.is_some() { ",stopped" } else { "" }
                ));
            }
            s
        }
        _ => return Err(format!("unknown command '{line}'")),
    })
}
