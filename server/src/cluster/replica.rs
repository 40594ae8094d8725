//! The engine's side of a cluster: what its driver's event stream tells it (roles, refusals,
//! sync answers, snapshots from the leader, a fail-stop: `cluster/events.rs`) and what it
//! tells its driver (proposals and decided entries, syncs, session moves), with the board they
//! share (`cluster/board.rs`). Standalone engines never call any of this.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use testkeeper_core::snapshot;
use testkeeper_wire::{Response, ZkError};
use tracing::{error, info};

use super::{Link, NodeId, Role};
use crate::engine::Engine;

/// What an embedded node's handle (and `/ready`, `mntr`, `/metrics`) reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub id: NodeId,
    pub role: Role,
    /// The leader this node knows (0: none).
    pub leader: NodeId,
    pub term: u64,
    /// Index of the last entry applied here.
    pub applied: u64,
    /// Why the node stopped serving, if it did.
    pub stopped: Option<String>,
    /// A follower that has not caught up with its leader yet, and serves no read
    /// (`cluster/read_gate.rs`).
    pub catching_up: bool,
}

/// A zookeeper-flavor sync waiting for the leader's answer, then for this node to catch up.
#[derive(Debug)]
pub(crate) struct SyncWait {
    pub conn: u64,
    pub xid: i32,
    pub session: i64,
    pub path: String,
    pub started: Instant,
    /// The leader's last index, once it answered.
    pub upto: Option<u64>,
}

/// Why a leader's snapshot was not installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    #[error("{0}")]
    Decode(snapshot::SnapshotError),
    #[error("it holds index {holds}, not {expected}")]
    Index { holds: u64, expected: u64 },
    #[error("writing it to {}: {source}", dir.display())]
    Write { dir: std::path::PathBuf, source: std::io::Error },
}

/// The cluster part of an engine.
#[derive(Debug)]
pub(crate) struct Replica {
    pub link: Link,
    /// What the driver publishes, and what it collects from here (`cluster/board.rs`).
    pub board: Arc<super::board::Board>,
    pub role: Role,
    pub leader: NodeId,
    pub term: u64,
    /// As the leader, the index of this term's first entry: the proposer starts once it is
    /// applied (`cluster/lead.rs`). `None` while not leading.
    pub lead_start: Option<u64>,
    /// The ready leader's proposer (`cluster/lead.rs`).
    pub lead: Option<super::lead::Lead>,
    pub syncs: BTreeMap<u64, SyncWait>,
    pub next_sync: u64,
    /// Fault injection: the next entry this node (as leader) proposes carries a wrong digest.
    pub invalid_digest_next: bool,
    /// Fault injection: this node applies the next write entry corrupted.
    pub corrupt_next: bool,
    /// zookeeper flavor, while this node leads: the node holding each session's connection,
    /// as ZooKeeper's leader's session tracker records its owner (set when the session is
    /// created, moved by a revalidation, claimed by the first node that asks after an
    /// election; SessionTrackerImpl.checkSession, setOwner).
    pub owners: HashMap<i64, NodeId>,
    /// Whether this follower serves reads yet (`cluster/read_gate.rs`).
    pub gate: super::read_gate::ReadGate,
}

impl Replica {
    pub fn new(link: Link, board: Arc<super::board::Board>) -> Replica {
        Replica {
            link,
            board,
            role: Role::Follower,
            leader: 0,
            term: 0,
            lead_start: None,
            lead: None,
            syncs: BTreeMap::new(),
            next_sync: 0,
            invalid_digest_next: false,
            corrupt_next: false,
            owners: HashMap::new(),
            gate: super::read_gate::ReadGate::Open,
        }
    }
}

impl Engine {
    /// The driver saw a new role, leader or term; `lead_start`: as the leader, the index of
    /// this term's first entry.
    pub(crate) fn role_changed(&mut self, role: Role, leader: NodeId, term: u64, lead_start: u64) {
        let Some(r) = self.seq.replica_mut() else { return };
        let was_leader = r.role == Role::Leader;
        let (had, had_term) = (r.leader, r.term);
        (r.role, r.leader, r.term) = (role, leader, term);
        // Whatever this node decided in an older role or term is the driver's to refuse.
        r.lead = None;
        r.lead_start = (role == Role::Leader).then_some(lead_start);
        if let Some(tap) = &self.cfg.tap {
            tap.role(r.link.node, role, term);
        }
        if role != Role::Leader || !was_leader {
            // A new leader's tracker knows no owners: each session's first request claims it.
            r.owners.clear();
        }
        if role == Role::Leader && !was_leader {
            // A new leader does not know when followers last heard from each session: every
            // session gets a whole timeout from now, as ZooKeeper's leader does.
            self.restart_session_clocks();
        }
        // A leader replaced by another (or re-elected in a new term) counts as lost too: the
        // driver may see a vote and the new leader's first append in one batch, never a moment
        // without a leader, where every ZooKeeper server went LOOKING in between.
        let lost = leader == 0 || (had != 0 && (had != leader || had_term != term));
        if lost {
            self.drop_zookeeper_clients();
        }
        self.lead_if_ready();
    }

    /// ZooKeeper: a server without a leader stops serving and disconnects its clients; their
    /// sessions live on if they reconnect in time.
    pub(crate) fn drop_zookeeper_clients(&mut self) {
        if self.state.rules().zookeeper_sessions {
            let conns: Vec<u64> = self.conns.keys().copied().collect();
            for c in conns {
                self.conns.close(c);
            }
        }
    }

    /// Whether this node leads (standalone: always).
    pub(crate) fn leads(&self) -> bool {
        self.seq.replica().is_none_or(|r| r.role == Role::Leader)
    }

    /// Whether this node knows a leader (standalone: always).
    pub(crate) fn has_leader(&self) -> bool {
        self.seq.replica().is_none_or(|r| r.leader != 0)
    }

    /// As the leader, zookeeper flavor: whether a request of `session` from node `from` comes
    /// through a connection the session has left for another node (ZooKeeper answers it with a
    /// SessionMovedException, which closes that connection). A session nobody owns yet (after
    /// an election) becomes `from`'s.
    pub(crate) fn session_moved_from(&mut self, session: i64, from: NodeId) -> bool {
        if session == 0 || !self.state.rules().zookeeper_sessions {
            return false;
        }
        let Some(r) = self.seq.replica_mut().filter(|r| r.role == Role::Leader) else { return false };
        *r.owners.entry(session).or_insert(from) != from
    }

    /// As the leader, zookeeper flavor: `session`'s connection is on node `on` now (it was
    /// created or resumed there).
    pub(crate) fn set_session_owner(&mut self, session: i64, on: NodeId) {
        if !self.state.rules().zookeeper_sessions {
            return;
        }
        if let Some(r) = self.seq.replica_mut().filter(|r| r.role == Role::Leader) {
            r.owners.insert(session, on);
        }
    }

    /// zookeeper flavor: a client resumed `session` on this node; the leader learns that the
    /// session lives here now (at once if this node leads).
    pub(crate) fn session_resumed_here(&mut self, session: i64) {
        let Some(r) = self.seq.replica() else { return };
        if r.role == Role::Leader {
            let me = r.link.node;
            self.set_session_owner(session, me);
        } else {
            r.link.revalidate(session);
        }
    }

    /// Records session activity, for the driver to report to the leader.
    pub(crate) fn note_activity(&mut self, session: i64) {
        if let Some(r) = self.seq.replica().filter(|r| r.role != Role::Leader) {
            r.board.touch(session);
        }
    }

    /// A proposal this node waited for was not placed in the log (no leader in time, the
    /// leader changed, or this leader's log moved under its decision, which the proposer then
    /// takes back): its waiter gets `code`, an error whose outcome is unknown to clients.
    pub(crate) fn refused(&mut self, origin: u64, code: i32) {
        self.take_back(origin);
        let Some((session, conn, xid, started)) = self.fail_waiter(origin) else { return };
        self.reply(conn, xid, self.state.zxid(), code, &Response::Empty);
        self.finished(conn, xid, testkeeper_wire::OpCode::Error, None, started);
        self.done(session);
    }

    /// Asks the leader (through the driver) how far it has proposed, for a zookeeper-flavor
    /// sync; the reply goes out once this node has applied that far.
    pub(crate) fn start_sync(&mut self, conn: u64, xid: i32, session: i64, path: String, started: Instant) {
        let Some(r) = self.seq.replica_mut() else { return };
        r.next_sync += 1;
        let id = r.next_sync;
        r.syncs.insert(id, SyncWait { conn, xid, session, path, started, upto: None });
        r.link.sync(id);
        self.sessions.one_more_in_flight(session);
    }

    /// The leader answered sync `id` with its last index.
    pub(crate) fn sync_answered(&mut self, id: u64, index: u64) {
        if let Some(w) = self.seq.replica_mut().and_then(|r| r.syncs.get_mut(&id)) {
            w.upto = Some(index);
        }
        self.finish_syncs();
    }

    /// Answers the syncs this node has caught up for, and opens the read gate if it has.
    pub(crate) fn finish_syncs(&mut self) {
        self.check_read_gate();
        let applied = self.state.last_index();
        let Some(r) = self.seq.replica_mut() else { return };
        let done: Vec<u64> =
            r.syncs.iter().filter(|(_, w)| w.upto.is_some_and(|u| u <= applied)).map(|(id, _)| *id).collect();
        for id in done {
            let w = self.seq.replica_mut().and_then(|r| r.syncs.remove(&id)).expect("listed above");
            self.reply(w.conn, w.xid, self.state.zxid(), 0, &Response::Path(w.path));
            self.finished(w.conn, w.xid, testkeeper_wire::OpCode::Sync, None, w.started);
            self.done(w.session);
        }
    }

    /// Fault injection: the next entry this node proposes as leader carries a wrong digest
    /// (ClickHouse's `keeper_leader_sets_invalid_digest`).
    pub(crate) fn take_invalid_digest_fault(&mut self) -> bool {
        self.seq.replica_mut().is_some_and(|r| std::mem::take(&mut r.invalid_digest_next))
    }

    /// Fault injection: whether to apply the next write entry corrupted on this replica.
    pub(crate) fn take_corrupt_fault(&mut self) -> bool {
        self.seq.replica_mut().is_some_and(|r| std::mem::take(&mut r.corrupt_next))
    }

    /// The leader sent a snapshot: it replaces the state. What this node waited for may be in
    /// it or not, so those waiters get CONNECTIONLOSS.
    pub(crate) fn install_snapshot(&mut self, body: &Arc<Vec<u8>>, index: u64) -> Result<(), InstallError> {
        let state = snapshot::read(body, self.state.rules(), |_| {}).map_err(InstallError::Decode)?;
        if state.last_index() != index {
            return Err(InstallError::Index { holds: state.last_index(), expected: index });
        }
        if let Some(dir) = self.cfg.data_dir.as_ref().map(|d| crate::storage::snapshot_dir(d)) {
            crate::storage::snapshots::write(&dir, index, body)
                .map_err(|source| InstallError::Write { dir, source })?;
        }
        self.state = state;
        if let (Some(tap), Some(r)) = (&self.cfg.tap, self.seq.replica()) {
            tap.loaded(r.link.node, index, self.state.digest(), "snapshot");
        }
        let gone: Vec<i64> =
            self.sessions.ids().into_iter().filter(|id| !self.state.sessions().contains_key(id)).collect();
        for id in gone {
            if let Some(conn) = self.forget_session(id) {
                self.conns.close(conn);
            }
        }
        let ids: Vec<i64> = self.state.sessions().keys().copied().collect();
        for id in ids {
            self.session_created(id);
        }
        for origin in self.waiting_origins() {
            self.refused(origin, ZkError::ConnectionLoss.code());
        }
        info!(index, "the state was replaced by the leader's snapshot");
        // The snapshot may take this node past what a sync or the read gate waits for, with no
        // entry applied after it to say so.
        self.finish_syncs();
        Ok(())
    }

    /// Stops serving for good: logs why, closes every connection, refuses everything after.
    pub(crate) fn stop_serving(&mut self, why: String) {
        if self.stop_reason.is_some() {
            return;
        }
        error!("stopping: {why}");
        if let Some(r) = self.seq.replica() {
            // The node leaves the cluster too: its driver votes and acknowledges no more.
            r.link.stop();
        }
        self.stopped = true;
        self.stop_reason = Some(why);
        let conns: Vec<u64> = self.conns.keys().copied().collect();
        for c in conns {
            self.conns.close(c);
        }
    }

    /// The node's status.
    pub(crate) fn node_status(&self) -> Option<NodeStatus> {
        let r = self.seq.replica()?;
        Some(NodeStatus {
            id: r.link.node,
            role: r.role,
            leader: r.leader,
            term: r.term,
            applied: self.state.last_index(),
            stopped: self.stop_reason.clone(),
            catching_up: self.catching_up(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::config::ServerConfig;
    use crate::core::flavor::Flavor;
    use crate::engine::Out;

    /// A follower of leader 2 in term 1 with one client connection, and that connection's queue.
    fn follower(flavor: Flavor) -> (Engine, tokio::sync::mpsc::UnboundedReceiver<Out>) {
        let mut e = Engine::new(Arc::new(ServerConfig::new(flavor)), Clock::manual(0));
        let (tx, _) = flume::unbounded();
        e.join_cluster(Replica::new(Link { node: 1, tx }, Arc::default()));
        let (out, rx) = tokio::sync::mpsc::unbounded_channel();
        e.add_conn("127.0.0.1:1".parse().unwrap(), out, crate::engine::backlog::Backlog::new(0));
        e.role_changed(Role::Follower, 2, 1, 0);
        (e, rx)
    }

    fn closed(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Out>) -> bool {
        std::iter::from_fn(|| rx.try_recv().ok()).any(|o| matches!(o, Out::Close))
    }

    #[test]
    fn a_zookeeper_follower_drops_its_clients_when_its_leader_is_replaced_without_a_gap() {
        let (mut e, mut rx) = follower(Flavor::Zookeeper);
        assert!(!closed(&mut rx), "a first leader closes nothing");
        e.role_changed(Role::Follower, 3, 2, 0);
        assert!(closed(&mut rx), "leader 2 replaced by 3 in one step");
        let (mut e, mut rx) = follower(Flavor::Zookeeper);
        e.role_changed(Role::Follower, 2, 2, 0);
        assert!(closed(&mut rx), "leader 2 re-elected in a new term");
        let (mut e, mut rx) = follower(Flavor::Zookeeper);
        e.role_changed(Role::Follower, 2, 1, 0);
        assert!(!closed(&mut rx), "nothing changed");
    }

    #[test]
    fn a_keeper_follower_keeps_its_clients_across_a_new_leader() {
        let (mut e, mut rx) = follower(Flavor::Keeper);
        e.role_changed(Role::Follower, 3, 2, 0);
        e.role_changed(Role::Follower, 0, 3, 0);
        assert!(!closed(&mut rx));
    }
}
