//! The replicated cluster: every node runs the same engine, and one Raft driver per node (on
//! tikv's raft-rs) orders the entries they all apply.
//!
//! The leader decides: a write that arrives on a follower is forwarded to the leader (our own
//! message, because the leader's proposer must see it against its uncommitted changes), the
//! leader's engine runs the proposer (`lead`), and its driver puts the entry (zxid, time, the
//! digest after it) into the Raft log. The driver only orders: it never takes the engine's
//! lock, and tells the engine what happened through one ordered stream of events (`events`). Every node applies committed entries with the one `apply`, checks the
//! digest, and stops serving on a mismatch; the node holding the client's connection answers
//! it (the entry's origin names it) and fires its watches. Sessions are created, closed and
//! expired through the log; only the leader expires them, from the activity every node reports.
//!
//! # Layout
//! - this file: [`ClusterConfig`], [`Link`] (the engine's handle on its driver), [`Role`].
//! - `message`: what nodes send each other, and its encoding.
//! - `net`: the transports: an in-memory network with seeded faults, and TCP.
//! - `store`: raft-rs's `Storage` over our `Log` and snapshots.
//! - `driver`: the one owner of `RawNode` (a thread, or a task on the node's runtime),
//!   handles `Ready` in raft-rs's order, and proposes as the leader.
//! - `replica`: the engine's side: roles, forwarded failures, sync, touches, fail-stop.
//! - `lead`: the ready leader's proposer, on the engine's side of the stream.
//! - `events`: the driver's ordered stream to the engine, and the task that applies it.
//! - `board`: what driver and engine share without a message (the Raft picture, touches).
//! - `info`: the Raft log and followers as the driver publishes them (`mntr`, `lgif`, `/ready`).
//! - `node`: one node assembled (engine, storage, driver, client listener).
//! - `embed`: [`embed::TestKeeperCluster`], n nodes in one process over the in-memory network.
//! - `timing`: the raft-rs configuration of a node: its election timeout, and why.
//! - `logger`: raft-rs's slog output, forwarded to tracing.
//! - `tap`: a recorder of applied entries, roles and loads, for white-box checkers.
//! - `broken`: the leader half of the `forget-acked-on-leader-change` broken mode.

mod board;
mod broken;
mod driver;
pub mod embed;
mod events;
mod info;
mod lead;
mod logger;
pub mod message;
pub mod net;
pub mod node;
mod read_gate;
mod replica;
mod store;
pub mod tap;
mod timing;

use std::collections::BTreeMap;

use testkeeper_core::propose::Proposal;
use testkeeper_core::txn::Entry;

pub(crate) use board::Board;
pub use driver::{Driver, DriverError, DriverHandle};
pub(crate) use events::Event;
pub use info::{FollowerInfo, RaftInfo, DEFAULT_STALE_LOG_GAP};
pub use message::Msg;
pub use replica::NodeStatus;
pub(crate) use replica::Replica;
pub use store::SnapRef;

/// A node's id in the cluster (1-based, as Keeper's `server_id`).
pub type NodeId = u64;

/// How a node takes part in the cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub id: NodeId,
    /// Every member, this node included, with its Raft address (unused in memory).
    pub peers: BTreeMap<NodeId, String>,
    /// Milliseconds per Raft tick.
    pub tick_ms: u64,
    /// Ticks without a leader's word before an election (randomized within one tick from the
    /// seed, never from raft-rs's own unseeded generator).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// Seed of this node's election timeout.
    pub seed: u64,
    /// Keeper's `stale_log_gap`: a follower at least this many entries behind the leader's
    /// last index is not counted in keeper flavor's `zk_synced_followers`.
    pub stale_log_gap: u64,
    /// Run the driver as a task on this runtime instead of on a thread of its own (best with
    /// the peers' and clients' connections on the same thread: docs/cluster.md, "Threads").
    pub driver_runtime: Option<tokio::runtime::Handle>,
}

impl ClusterConfig {
    /// Fast defaults for tests: 20 ms ticks, elections after 10-11 ticks, heartbeats every 2.
    pub fn new(id: NodeId, peers: BTreeMap<NodeId, String>) -> ClusterConfig {
        ClusterConfig {
            id,
            peers,
            tick_ms: 20,
            election_ticks: 10,
            heartbeat_ticks: 2,
            seed: 0,
            stale_log_gap: DEFAULT_STALE_LOG_GAP,
            driver_runtime: None,
        }
    }

    /// Node `id`'s own seed in a run seeded `run_seed`: distinct per node, so nodes started
    /// with one seed do not all time out on the same tick.
    pub fn node_seed(run_seed: u64, id: NodeId) -> u64 {
        run_seed.wrapping_add(id.wrapping_mul(NODE_SEED_STEP))
    }
}

/// The step between node seeds of one run (the 64-bit golden ratio).
pub(crate) const NODE_SEED_STEP: u64 = 0x9e37_79b9_7f4a_7c15;

/// A node's Raft role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
    Candidate,
}

impl Role {
    /// As `mntr`'s `zk_server_state` and `/ready` say it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Follower => "follower",
            Role::Candidate => "candidate",
        }
    }
}

/// What the engine sends its driver.
#[derive(Debug)]
pub enum Input {
    /// Hand this to the leader to decide (back to this node's engine once it is the ready
    /// leader, `Event::Decide`), or keep it until there is one.
    Propose { origin: u64, session: i64, proposal: Proposal },
    /// An entry this node's engine decided as the leader: into the log, or refused.
    Decided { entry: Entry },
    /// Fail the waiter of `origin` on the node it came from.
    Refuse { origin: u64, code: i32 },
    /// A message from another node.
    Net { from: NodeId, msg: Msg },
    /// Ask the leader how far it has proposed (a zookeeper-flavor sync); `id` comes back.
    SyncRequest { id: u64 },
    /// Move the leadership to node `to` (`rqld` asks for this node; a follower forwards it to
    /// the leader), or with `to == 0`, as the leader, to its most up-to-date follower (`ydld`).
    TransferLeader { to: NodeId },
    /// zookeeper flavor: a client resumed `session` here; tell the leader it lives here now.
    Revalidate { session: i64 },
    /// The transport found node `peer`'s process gone: its connection here ended and its
    /// address refuses connections (`net/tcp/gone.rs`).
    PeerGone { peer: NodeId },
    /// Stop the driver (shutdown, a kill, or a fail-stop).
    Stop,
}

/// The engine's handle on its node's driver.
#[derive(Debug, Clone)]
pub struct Link {
    pub node: NodeId,
    pub(crate) tx: flume::Sender<Input>,
}

impl Link {
    /// Hands a proposal to the driver.
    pub fn propose(&self, origin: u64, session: i64, proposal: Proposal) {
        let _ = self.tx.send(Input::Propose { origin, session, proposal });
    }

    /// Hands an entry this leader decided to the driver, to order.
    pub fn decided(&self, entry: Entry) {
        let _ = self.tx.send(Input::Decided { entry });
    }

    /// Has the driver fail `origin`'s waiter on the node it came from.
    pub fn refuse(&self, origin: u64, code: i32) {
        let _ = self.tx.send(Input::Refuse { origin, code });
    }

    /// Stops the driver: the node takes no further part in the cluster.
    pub fn stop(&self) {
        let _ = self.tx.send(Input::Stop);
    }

    /// Asks the driver to learn the leader's last index for a sync.
    pub fn sync(&self, id: u64) {
        let _ = self.tx.send(Input::SyncRequest { id });
    }

    /// Asks the driver to move the leadership to node `to` (0: the leader picks).
    pub fn transfer_leader(&self, to: NodeId) {
        let _ = self.tx.send(Input::TransferLeader { to });
    }

    /// Tells the leader (through the driver) that `session` was resumed on this node.
    pub fn revalidate(&self, session: i64) {
        let _ = self.tx.send(Input::Revalidate { session });
    }
}

/// Why a peer list does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeersError {
    #[error("peer '{0}' is not ID=HOST:PORT")]
    NotIdEqualsAddress(String),
    #[error("peer id '{0}' is not a positive number")]
    BadId(String),
    #[error("peer id {0} appears twice")]
    Repeated(NodeId),
    #[error("no peers given")]
    Empty,
}

/// Parses `1=host:port,2=host:port,...` (Keeper's `raft_configuration`, flattened).
///
/// # Errors
/// A member without `=`, an id that is not a positive number, or a repeated id.
pub fn parse_peers(s: &str) -> Result<BTreeMap<NodeId, String>, PeersError> {
    let mut peers = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part.split_once('=').ok_or_else(|| PeersError::NotIdEqualsAddress(part.into()))?;
        let id: NodeId =
            id.trim().parse().ok().filter(|i| *i > 0).ok_or_else(|| PeersError::BadId(id.trim().into()))?;
        if peers.insert(id, addr.trim().to_string()).is_some() {
            return Err(PeersError::Repeated(id));
        }
    }
    if peers.is_empty() {
        return Err(PeersError::Empty);
    }
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_and_refuse_what_they_should() {
        let p = parse_peers("1=127.0.0.1:1, 2=localhost:2,3=[::1]:3").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[&2], "localhost:2");
        assert_eq!(parse_peers("1=a:1,1=b:2"), Err(PeersError::Repeated(1)));
        assert_eq!(parse_peers("x=a:1"), Err(PeersError::BadId("x".into())));
        assert_eq!(parse_peers("0=a:1"), Err(PeersError::BadId("0".into())));
        assert_eq!(parse_peers("1"), Err(PeersError::NotIdEqualsAddress("1".into())));
        assert_eq!(parse_peers(""), Err(PeersError::Empty));
        assert_eq!(parse_peers("1=a:1,1=b:2").unwrap_err().to_string(), "peer id 1 appears twice");
    }
}
