//! One node's Raft driver: the one thread that owns `RawNode` and its storage. It ticks,
//! steps messages, handles every `Ready` in raft-rs's documented order (messages, snapshot,
//! committed entries, append with the hard state, flush, persisted messages, advance, the
//! light ready, advance_apply), and, while it leads, decides proposals with the proposer and
//! proposes them. Every proposal is answered through the engine: the entry's origin names who
//! waits, and a proposal that cannot be placed is refused with the error Keeper gives.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use raft::eraftpb::{Message, Snapshot};
use raft::{RawNode, StateRole};
use testkeeper_core::propose::{Decide, Proposal, Proposer};
use testkeeper_core::txn::Txn;
use testkeeper_wire::{Request, ZkError};
use tracing::{error, info, warn};

use super::info::{FollowerInfo, RaftInfo};
use super::message::Msg;
use super::net::Transport;
use super::store::{from_raft, to_raft, RaftStore, SnapRef};
use super::{ClusterConfig, Input, NodeId, Role};
use crate::engine::Shared;

/// How long a proposal may wait for a leader before it fails (Keeper's operation_timeout_ms).
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The driver of one node.
pub struct Driver {
    id: NodeId,
    peers: Vec<NodeId>,
    node: RawNode<RaftStore>,
    net: Arc<dyn Transport>,
    shared: Weak<Shared>,
    rx: Receiver<Input>,
    tick: Duration,
    /// The proposer, while this node leads and has applied everything before its term.
    proposer: Option<Proposer>,
    /// The index of this leader's first entry: proposals wait until it is applied.
    lead_start: u64,
    role: Role,
    leader: NodeId,
    term: u64,
    /// Proposals waiting for a leader (or for this leader to be ready), with when they came.
    parked: VecDeque<(Instant, u64, i64, Proposal)>,
    /// Origins of this node's proposals in flight, with the term they were sent in and when:
    /// a new term fails them, and so does the operation timeout (their outcome is unknown).
    in_flight: HashMap<u64, (u64, Instant)>,
    /// zookeeper-flavor syncs asked of the leader.
    syncs: VecDeque<u64>,
    /// Set by the harness: the driver does nothing (a paused process) until it is cleared.
    paused: Arc<AtomicBool>,
    /// The highest commit index the leader has sent this node (lgif's leader_committed_log_idx).
    leader_commit: u64,
    /// Keeper's `stale_log_gap`, for the synced-follower count.
    stale_log_gap: u64,
    /// The deliberately broken `forget-acked-on-leader-change` mode, while this node leads.
    early: Option<super::broken::EarlyAck>,
}

/// A running driver: its input channel and thread.
pub struct DriverHandle {
    pub tx: Sender<Input>,
    /// While true the driver neither ticks nor reads its input (a paused process).
    pub paused: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DriverHandle {
    /// Stops the driver and waits for its thread.
    pub fn stop(&mut self) {
        let _ = self.tx.send(Input::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DriverHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts node `cfg.id`'s driver over `store`, applying to the engine behind `shared` (whose
/// state is at `applied`).
///
/// # Errors
/// raft-rs refuses the configuration or the storage.
pub fn spawn(
    cfg: &ClusterConfig,
    store: RaftStore,
    applied: u64,
    net: Arc<dyn Transport>,
    shared: &Arc<Shared>,
    tx: Sender<Input>,
    rx: Receiver<Input>,
) -> Result<DriverHandle, String> {
    let rc = super::timing::raft_config(cfg, applied);
    rc.validate().map_err(|e| format!("raft configuration: {e}"))?;
    let node = RawNode::new(&rc, store, &super::logger::logger(cfg.id)).map_err(|e| format!("raft node: {e}"))?;
    let d = Driver {
        id: cfg.id,
        peers: cfg.peers.keys().copied().collect(),
        node,
        net,
        shared: Arc::downgrade(shared),
        rx,
        tick: Duration::from_millis(cfg.tick_ms.max(1)),
        proposer: None,
        lead_start: 0,
        role: Role::Follower,
        leader: 0,
        term: 0,
        parked: VecDeque::new(),
        in_flight: HashMap::new(),
        syncs: VecDeque::new(),
        paused: Arc::new(AtomicBool::new(false)),
        leader_commit: 0,
        stale_log_gap: cfg.stale_log_gap,
        early: None,
    };
    let paused = d.paused.clone();
    let thread = std::thread::Builder::new()
        .name(format!("testkeeper-raft-{}", cfg.id))
        .spawn(move || d.run())
        .map_err(|e| format!("spawning the raft thread: {e}"))?;
    Ok(DriverHandle { tx, paused, thread: Some(thread) })
}

impl Driver {
    fn run(mut self) {
        let mut next_tick = Instant::now() + self.tick;
        loop {
            if self.paused.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
                next_tick = Instant::now() + self.tick;
                continue;
            }
            let wait = next_tick.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(Input::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(input) => {
                    self.input(input);
                    // Take whatever else already queued before handling the Ready: one
                    // append and one flush for many proposals.
                    while let Ok(more) = self.rx.try_recv() {
                        if matches!(more, Input::Stop) {
                            return;
                        }
                        self.input(more);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            if now >= next_tick {
                // Ticks missed while this thread was starved are not made up: ten catch-up ticks
                // in a row would start an election before the leader's heartbeat, already
                // queued, is read (on a loaded machine every node of an embedded cluster
                // stalls at once, and re-elected for nothing).
                next_tick = (next_tick + self.tick).max(now);
                self.node.tick();
                self.on_tick();
            }
            if !self.ready() {
                return;
            }
        }
    }

    fn input(&mut self, input: Input) {
        match input {
            Input::Propose { origin, session, proposal } => self.proposal(origin, session, proposal),
            Input::Net { from, msg } => self.message(from, msg),
            Input::SyncRequest { id } => self.sync_request(id),
            Input::TransferLeader { to } => self.transfer_leader(to),
            Input::Revalidate { session } => {
                // The engine records it itself while it leads; otherwise the leader learns it.
                if self.role != Role::Leader && self.leader != 0 {
                    self.net.send(self.id, self.leader, Msg::Revalidate { session });
                }
            }
            Input::Stop => {}
        }
    }

    fn message(&mut self, from: NodeId, msg: Msg) {
        match msg {
            Msg::Raft(m) => {
                use raft::eraftpb::MessageType::{MsgAppend, MsgHeartbeat};
                if matches!(m.get_msg_type(), MsgAppend | MsgHeartbeat) && m.term >= self.node.raft.term {
                    self.leader_commit = self.leader_commit.max(m.commit);
                }
                if let Err(e) = self.node.step(m) {
                    warn!(node = self.id, from, error = %e, "raft message refused");
                }
            }
            Msg::Forward { origin, session, proposal } => self.proposal(origin, session, proposal),
            Msg::Refuse { origin, code } => self.refuse_local(origin, code),
            Msg::Touch { sessions } => {
                if let Some(s) = self.shared.upgrade() {
                    let mut e = s.engine();
                    for id in sessions {
                        e.touch(id);
                    }
                }
            }
            Msg::SyncAsk { id } => {
                let index = self.node.raft.raft_log.last_index();
                self.net.send(self.id, from, Msg::SyncAnswer { id, index });
            }
            Msg::SyncAnswer { id, index } => {
                if let Some(s) = self.shared.upgrade() {
                    s.engine().sync_answered(id, index);
                }
            }
            Msg::Revalidate { session } => {
                if let Some(s) = self.shared.upgrade() {
                    s.engine().set_session_owner(session, from);
                }
            }
        }
    }

    /// A proposal, this node's own or forwarded by a follower.
    fn proposal(&mut self, origin: u64, session: i64, proposal: Proposal) {
        let local = origin >> 48 == self.id;
        if self.role == Role::Leader && self.node.raft.state != StateRole::Leader {
            // A message read in this same batch (a paused node waking up to a newer term)
            // already made raft-rs a follower and may have cut its log: deciding against the
            // old leader's proposer now would misnumber the entry. Take the new role first.
            let leader = self.node.raft.leader_id;
            self.soft_state(leader, self.node.raft.state);
        }
        match self.role {
            Role::Leader if self.proposer.is_some() => self.decide(origin, session, proposal),
            Role::Leader => self.parked.push_back((Instant::now(), origin, session, proposal)),
            _ if !local => {
                self.net.send(self.id, origin >> 48, Msg::Refuse { origin, code: ZkError::ConnectionLoss.code() })
            }
            _ if self.leader != 0 => {
                self.in_flight.insert(origin, (self.term, Instant::now()));
                self.net.send(self.id, self.leader, Msg::Forward { origin, session, proposal });
            }
            _ => self.parked.push_back((Instant::now(), origin, session, proposal)),
        }
    }

    /// As the ready leader: decide the entry against the committed state plus everything
    /// this leader proposed, and propose it.
    fn decide(&mut self, origin: u64, session: i64, proposal: Proposal) {
        let Some(shared) = self.shared.upgrade() else { return };
        let entry = {
            let mut e = shared.engine();
            let proposer = self.proposer.as_mut().expect("checked by the caller");
            let cp = proposer.checkpoint();
            // ZooKeeper's leader checks a write's session against the node holding its
            // connection: from a connection the session has left, an error entry (a zxid,
            // nothing changed) whose waiter's connection is then closed.
            let from = origin >> 48;
            let moved = matches!(&proposal, Proposal::Write { req, .. } if !matches!(req, Request::Close))
                && e.session_moved_from(session, from);
            let what = if moved { Decide::Fail(ZkError::SessionMoved) } else { proposal.decide() };
            let entry = proposer.propose(e.state(), session, e.clock.now_ms(), origin, what);
            if let Txn::CreateSession { id, .. } = entry.txn() {
                e.set_session_owner(*id, from);
            }
            let entry = if e.take_invalid_digest_fault() { entry.with_invalid_digest() } else { entry };
            let expected = self.node.raft.raft_log.last_index() + 1;
            if entry.index() != expected {
                // Cannot happen while the role is current (see `proposal`): a bug, so loud.
                error!(
                    node = self.id,
                    decided = entry.index(),
                    raft = expected,
                    "proposer and raft log disagree on the next index"
                );
                proposer.restore(cp);
                drop(e);
                return self.refuse(origin, ZkError::ConnectionLoss.code());
            }
            (entry, cp)
        };
        let (entry, cp) = entry;
        if origin >> 48 == self.id {
            self.in_flight.insert(origin, (self.term, Instant::now()));
        }
        if let Err(e) = self.node.propose(vec![], to_raft(&entry).data.to_vec()) {
            warn!(node = self.id, error = %e, "proposal dropped");
            if let Some(p) = self.proposer.as_mut() {
                p.restore(cp);
            }
            self.in_flight.remove(&origin);
            self.refuse(origin, ZkError::ConnectionLoss.code());
        } else if let Some(early) = self.early.as_mut() {
            early.appended(&mut shared.engine(), &entry, origin >> 48 == self.id);
        }
    }

    /// Fails a proposal's waiter, here or on the node it came from.
    fn refuse(&mut self, origin: u64, code: i32) {
        let node = origin >> 48;
        if node == self.id {
            self.refuse_local(origin, code);
        } else {
            self.net.send(self.id, node, Msg::Refuse { origin, code });
        }
    }

    fn refuse_local(&mut self, origin: u64, code: i32) {
        self.in_flight.remove(&origin);
        if let Some(s) = self.shared.upgrade() {
            s.engine().refused(origin, code);
        }
    }

    fn sync_request(&mut self, id: u64) {
        if self.role == Role::Leader {
            let index = self.node.raft.raft_log.last_index();
            if let Some(s) = self.shared.upgrade() {
                s.engine().sync_answered(id, index);
            }
        } else if self.leader != 0 {
            self.net.send(self.id, self.leader, Msg::SyncAsk { id });
        } else {
            self.syncs.push_back(id);
        }
    }

    /// Periodic work: report session activity to the leader, time out parked proposals,
    /// pick up a snapshot the engine finished.
    fn on_tick(&mut self) {
        let Some(shared) = self.shared.upgrade() else { return };
        let info = self.info();
        let (touched, snap) = {
            let mut e = shared.engine();
            e.set_raft_info(info);
            (e.take_touched(), e.newest_snapshot())
        };
        if !touched.is_empty() && self.role != Role::Leader && self.leader != 0 {
            self.net.send(self.id, self.leader, Msg::Touch { sessions: touched });
        }
        let now = Instant::now();
        while self.parked.front().is_some_and(|(t, ..)| now.duration_since(*t) > OPERATION_TIMEOUT) {
            let (_, origin, ..) = self.parked.pop_front().expect("checked above");
            self.refuse(origin, ZkError::OperationTimeout.code());
        }
        // A forwarded proposal can be lost on the way (the leader never saw it): after
        // Keeper's operation timeout its client gets OPERATIONTIMEOUT, as Keeper answers.
        let late: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, (_, at))| now.duration_since(*at) > OPERATION_TIMEOUT)
            .map(|(o, _)| *o)
            .collect();
        for origin in late {
            self.refuse_local(origin, ZkError::OperationTimeout.code());
        }
        if let Some((snap, keep_from)) = snap.filter(|(s, _)| s.index > self.node.store().snapshot_index()) {
            if let Err(e) = self.node.mut_store().snapshot_taken(snap, keep_from) {
                error!(node = self.id, error = %e, "compacting the raft log failed");
            }
        }
    }

    /// The log and, while leading, the followers' progress, for the engine to report.
    fn info(&self) -> RaftInfo {
        let r = &self.node.raft;
        let leading = r.state == StateRole::Leader;
        let followers = if leading {
            (r.prs().iter())
                .filter(|(id, _)| **id != self.id)
                .map(|(id, p)| FollowerInfo {
                    id: *id,
                    matched: p.matched,
                    active: p.recent_active,
                    replicating: p.state == raft::ProgressState::Replicate,
                })
                .collect()
        } else {
            Vec::new()
        };
        RaftInfo {
            first_index: r.raft_log.first_index(),
            last_index: r.raft_log.last_index(),
            last_term: r.raft_log.last_term(),
            commit: r.raft_log.committed,
            leader_commit: if leading { r.raft_log.committed } else { self.leader_commit },
            snapshot_index: self.node.store().snapshot_index(),
            followers,
            stale_log_gap: self.stale_log_gap,
            members: self.peers.clone(),
        }
    }

    /// `rqld`/`ydld`: to node `to` (raft-rs forwards a follower's request to the leader), or,
    /// with `to == 0` on the leader, to the follower that has the most of the log (the lowest
    /// id among equals), as NuRaft's yield picks the most up-to-date successor.
    fn transfer_leader(&mut self, to: NodeId) {
        let to = if to != 0 {
            to
        } else if self.role == Role::Leader {
            let best = (self.node.raft.prs().iter())
                .filter(|(id, _)| **id != self.id)
                .max_by_key(|(id, p)| (p.matched, std::cmp::Reverse(**id)))
                .map(|(id, _)| *id);
            match best {
                Some(b) => b,
                None => return,
            }
        } else {
            return;
        };
        info!(node = self.id, to, leader = self.leader, "leadership transfer requested");
        self.node.transfer_leader(to);
    }

    /// Handles one `Ready`, if there is one. Returns false once the node has stopped.
    fn ready(&mut self) -> bool {
        if !self.node.has_ready() {
            return true;
        }
        let mut rd = self.node.ready();
        if let Some(ss) = rd.ss() {
            let (leader, role) = (ss.leader_id, ss.raft_state);
            self.soft_state(leader, role);
        }
        // 1. Messages a leader may send before it has persisted.
        self.send(rd.take_messages());
        // 2. A snapshot from the leader replaces the state.
        if !rd.snapshot().is_empty() && !self.install(rd.snapshot().clone()) {
            return false;
        }
        // 3. Committed entries.
        if !self.apply(rd.take_committed_entries()) {
            return false;
        }
        // 4 and 5. New entries and the hard state, in one write; then the flush.
        if !rd.entries().is_empty() || rd.hs().is_some() {
            if let Err(e) = self.node.mut_store().append(rd.entries(), rd.hs()) {
                return self.fail(format!("appending to the raft log failed: {e}"));
            }
        }
        if rd.must_sync() {
            if let Some(s) = self.node.store().syncer() {
                if let Err(e) = s.sync() {
                    return self.fail(format!("flushing the raft log failed: {e}"));
                }
            }
        }
        // 6. Messages that may go only once the entries and hard state are durable.
        self.send(rd.take_persisted_messages());
        // 7. Advance, and the light ready it returns.
        let mut light = self.node.advance(rd);
        if let Some(commit) = light.commit_index() {
            self.node.mut_store().set_commit(commit);
        }
        self.send(light.take_messages());
        if !self.apply(light.take_committed_entries()) {
            return false;
        }
        self.node.advance_apply();
        // What changed is visible at once (mntr, lgif, /metrics), not only at the next tick.
        self.publish();
        true
    }

    fn publish(&self) {
        let info = self.info();
        if let Some(s) = self.shared.upgrade() {
            s.engine().set_raft_info(info);
        }
    }

    fn send(&self, msgs: Vec<Message>) {
        for m in msgs {
            let to = m.to;
            self.net.send(self.id, to, Msg::Raft(m));
        }
    }

    fn soft_state(&mut self, leader: NodeId, role: StateRole) {
        let role = match role {
            StateRole::Leader => Role::Leader,
            StateRole::Follower => Role::Follower,
            StateRole::Candidate | StateRole::PreCandidate => Role::Candidate,
        };
        let term = self.node.raft.term;
        let changed = (leader, role) != (self.leader, self.role);
        (self.leader, self.role) = (leader, role);
        if term != self.term {
            self.term = term;
            // A proposal sent in an older term may be lost: its outcome is unknown.
            let stale: Vec<u64> = self.in_flight.iter().filter(|(_, (t, _))| *t < term).map(|(o, _)| *o).collect();
            for origin in stale {
                self.refuse_local(origin, ZkError::ConnectionLoss.code());
            }
        }
        if !changed {
            return;
        }
        info!(node = self.id, role = role.name(), leader, term, "raft role changed");
        self.proposer = None;
        self.early = None;
        if role == Role::Leader {
            // raft-rs appended this term's first (empty) entry when it became leader.
            self.lead_start = self.node.raft.raft_log.last_index();
        }
        if let Some(s) = self.shared.upgrade() {
            s.engine().role_changed(role, leader, term);
        }
        if role != Role::Leader && leader != 0 {
            // Forward what waited for a leader.
            for (_, origin, session, proposal) in std::mem::take(&mut self.parked) {
                self.proposal(origin, session, proposal);
            }
            for id in std::mem::take(&mut self.syncs) {
                self.net.send(self.id, leader, Msg::SyncAsk { id });
            }
        }
    }

    fn install(&mut self, snap: Snapshot) -> bool {
        let meta = snap.get_metadata();
        let (index, term) = (meta.index, meta.term);
        let Some(shared) = self.shared.upgrade() else { return false };
        let body = Arc::new(snap.data.to_vec());
        if let Err(why) = shared.engine().install_snapshot(&body, index) {
            return self.fail(format!("the leader's snapshot at index {index} does not load: {why}"));
        }
        if let Err(e) = self.node.mut_store().install(SnapRef { index, term, body }) {
            return self.fail(format!("resetting the raft log to the snapshot failed: {e}"));
        }
        info!(node = self.id, index, term, "installed the leader's snapshot");
        true
    }

    /// Applies committed entries. Returns false if the engine stopped (a digest mismatch).
    fn apply(&mut self, entries: Vec<raft::eraftpb::Entry>) -> bool {
        if entries.is_empty() {
            return true;
        }
        let Some(shared) = self.shared.upgrade() else { return false };
        let mut e = shared.engine();
        for re in &entries {
            let entry = match from_raft(re) {
                Ok(x) => x,
                Err(why) => {
                    drop(e);
                    return self.fail(format!("committed entry {} does not decode: {why}", re.index));
                }
            };
            if entry.origin() >> 48 == self.id {
                self.in_flight.remove(&entry.origin());
            }
            let index = entry.index();
            e.commit(entry);
            if let Some(why) = e.stopped_reason() {
                drop(e);
                return self.fail(why);
            }
            if let Some(p) = self.proposer.as_mut() {
                p.committed(index);
            }
        }
        if self.role == Role::Leader && self.proposer.is_none() && e.state().last_index() >= self.lead_start {
            // Everything before this term is applied: the overlay starts empty over it.
            let mut proposer = Proposer::new(e.state(), self.term);
            proposer.set_broken_partial_multi(e.cfg.broken == Some(crate::broken::Broken::PartialMulti));
            self.early = super::broken::EarlyAck::new(&e.cfg, e.state());
            debug_assert_eq!(proposer.last_index(), self.node.raft.raft_log.last_index());
            self.proposer = Some(proposer);
            drop(e);
            for (_, origin, session, proposal) in std::mem::take(&mut self.parked) {
                self.proposal(origin, session, proposal);
            }
            for id in std::mem::take(&mut self.syncs) {
                self.sync_request(id);
            }
        }
        true
    }

    /// Stops this node: it logs why, stops taking part in the cluster, and the engine stops
    /// serving (the process exits non-zero; an embedded node reports why).
    fn fail(&mut self, why: String) -> bool {
        error!(node = self.id, "{why}");
        if let Some(s) = self.shared.upgrade() {
            s.engine().stop_serving(why);
        }
        false
    }
}
