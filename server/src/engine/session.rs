//! The engine's side of sessions: the handshake (a new session is an entry through the log;
//! resumption in zookeeper flavor is not), disconnects, expiry by deadline, and the
//! container/TTL collector that runs on the same tick. The records themselves, and each
//! session's place in the order, are [`Sessions`](super::sessions::Sessions).

use bytes::BytesMut;
use testkeeper_core::prepare::{decide, Ctx};
use testkeeper_core::propose::Decide;
use testkeeper_core::txn::Txn;
use testkeeper_wire::frame::put_record;
use testkeeper_wire::records::connect::{ConnectRequest, ConnectResponse, PASSWORD_LEN};
use testkeeper_wire::records::data::DeleteRequest;
use testkeeper_wire::{Id, Request};
use tracing::{debug, info};

use super::sessions::{End, SessionRt};
use super::waiters::Reply;
use super::{random_passwd, sequencer, Engine};

/// The outcome of a handshake. The response, if any, is already queued on the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Serve the session (a new one answers once its entry commits).
    Accept,
    /// The response said the session expired: close after it.
    Reject,
    /// Close without a response.
    Refuse(&'static str),
}

impl Engine {
    /// The session password, as the session's entry recorded it: 16 zero bytes in Keeper; in
    /// ZooKeeper random bytes drawn when it was created (never from the printed seed, so
    /// nobody who only read the server's output can resume a session).
    pub(crate) fn password(&self, session: i64) -> Vec<u8> {
        self.state.sessions().get(&session).map_or([0; PASSWORD_LEN], |s| s.passwd).to_vec()
    }

    pub(crate) fn queue_handshake(&mut self, conn: u64, resp: &ConnectResponse) {
        let mut out = BytesMut::new();
        put_record(&mut out, resp);
        if self.state.rules().zookeeper_sessions {
            self.send(conn, &out);
        } else {
            // Keeper counts neither handshake packet (its TCP handler sends the answer before
            // it counts; ClickHouse's test_keeper_four_word_command sees Received 10, Sent 10
            // after a handshake and 10 creates): the request is not counted here either.
            self.send_uncounted(conn, &out);
        }
    }

    /// Handles a ConnectRequest on connection `conn`.
    pub fn connect(&mut self, conn: u64, req: &ConnectRequest) -> Handshake {
        if self.stopped {
            return Handshake::Refuse("the server is stopping");
        }
        if self.refuse_connect(req.session_id) {
            return Handshake::Refuse("a refuse fault closed the new connection");
        }
        let zk = self.state.rules().zookeeper_sessions;
        // ZooKeeper 3.8 appends the readOnly byte only for a client that sent one: a 44-byte
        // ConnectRequest ("old client", e.g. ClickHouse) gets a 36-byte reply, as from Keeper.
        let read_only = if zk && req.read_only.is_some() { Some(false) } else { None };
        if !self.has_leader() || self.catching_up() {
            if zk {
                return Handshake::Refuse(if self.has_leader() {
                    "this server is catching up with its leader"
                } else {
                    "this server has no leader"
                });
            }
            // Keeper: "Ignoring user request, because the server is not active yet": protocol 42
            // with the negotiated timeout and session id 0 (KeeperTCPHandler::sendHandshake). A
            // timeout of 0 would read as an expired session (kazoo LOST, Java Expired); Keeper's
            // clients see a connection that ends, and try another server.
            let resp = ConnectResponse {
                protocol_version: 42,
                timeout_ms: self.cfg.negotiate_timeout(req.timeout_ms),
                session_id: 0,
                passwd: vec![0; PASSWORD_LEN],
                read_only: None,
            };
            self.queue_handshake(conn, &resp);
            return Handshake::Reject;
        }
        if zk && req.last_zxid_seen > self.state.zxid() {
            // ZooKeeper: "Refusing session request ... client must try another server".
            return Handshake::Refuse("client has seen a zxid this server has not");
        }
        let timeout_ms = self.cfg.negotiate_timeout(req.timeout_ms);
        let (now, mono) = (self.clock.now_ms(), self.clock.mono_ms());
        if zk && req.session_id != 0 {
            let id = req.session_id;
            let live = self.sessions.is_live(id);
            if !live || self.password(id) != req.passwd {
                debug!(session = format_args!("{id:#x}"), "resume refused: session expired or bad password");
                let resp = ConnectResponse {
                    protocol_version: 0,
                    timeout_ms: 0,
                    session_id: 0,
                    passwd: vec![0; PASSWORD_LEN],
                    read_only,
                };
                self.queue_handshake(conn, &resp);
                return Handshake::Reject;
            }
            // Watches belong to the connection in ZooKeeper (ServerCnxn is the Watcher): the
            // new one starts with none, and the client re-sends them with setWatches.
            self.watches.remove_session(id);
            let s = self.sessions.get_mut(id).expect("checked above");
            let old = s.conn.replace(conn);
            s.timeout_ms = timeout_ms;
            s.deadline_ms = mono + i64::from(timeout_ms);
            if let Some(old) = old.filter(|o| *o != conn) {
                // The session moved: the old connection is closed, as ZooKeeper does.
                if let Some(c) = self.conns.get_mut(&old) {
                    c.session = 0;
                }
                self.conns.close(old);
            }
            self.bind(conn, id);
            // In a cluster the session may have come from another node: the leader records
            // that it lives here now, so its old connection there gets SESSIONMOVED.
            self.session_resumed_here(id);
            let peer = self.conns.get(&conn).map(|c| c.peer.to_string()).unwrap_or_default();
            info!(session = format_args!("{id:#x}"), timeout_ms, %peer, "session resumed");
            let resp = ConnectResponse {
                protocol_version: 0,
                timeout_ms,
                session_id: id,
                passwd: self.password(id),
                read_only,
            };
            self.queue_handshake(conn, &resp);
            return Handshake::Accept;
        }
        let passwd = random_passwd();
        let what = Decide::CreateSession { timeout_ms, passwd };
        let sequencer::Sequencer::Local(local) = &mut self.seq else {
            // The leader decides the id; the connection is bound when the entry commits here.
            self.propose(0, what, Reply::Handshake { conn, read_only });
            return Handshake::Accept;
        };
        // Standalone the id is known as the entry is decided: the connection is bound now.
        // The waiter is added as `wait` adds it, without the in-flight count (`self` is
        // borrowed here), which session 0 has not: the new session's own count is set below.
        let origin = self.waiters.add(0, Reply::Handshake { conn, read_only });
        let (entry, at_once) = local.decide(&self.state, 0, now, origin, what);
        let Txn::CreateSession { id, .. } = *entry.txn() else { unreachable!("a session entry creates a session") };
        // The response goes out when the session's entry commits; requests that arrive before
        // that wait behind it.
        let mut rt =
            SessionRt { timeout_ms, conn: Some(conn), deadline_ms: mono + i64::from(timeout_ms), ..Default::default() };
        rt.turn.inflight = 1;
        self.sessions.insert(id, rt);
        self.waiters.get_mut(origin).expect("registered above").session = id;
        self.bind(conn, id);
        if at_once {
            self.settle();
        }
        Handshake::Accept
    }

    /// A session's entry committed: every replica keeps a run-time record of it, to expire it
    /// if this one leads and its client stays away.
    pub(crate) fn session_created(&mut self, id: i64) {
        if self.sessions.contains(id) {
            return;
        }
        let timeout_ms = self.state.sessions().get(&id).map_or(0, |s| s.timeout_ms);
        let deadline_ms = self.clock.mono_ms() + i64::from(timeout_ms);
        self.sessions.insert(id, SessionRt { timeout_ms, deadline_ms, ..Default::default() });
    }

    pub(crate) fn bind(&mut self, conn: u64, session: i64) {
        let zk = self.state.rules().zookeeper_sessions;
        if let Some(c) = self.conns.get_mut(&conn) {
            c.session = session;
            // ZooKeeper gives every connection its peer's ip identity (whoAmI shows it).
            if zk && c.auth.is_empty() {
                c.auth.push(Id { scheme: "ip".into(), id: c.peer.ip().to_string() });
            }
        }
    }

    /// Restarts a session's expiry countdown (every request does this).
    pub fn touch(&mut self, session: i64) {
        self.sessions.touch(session, self.readings.mono_ms(&self.clock));
    }

    /// A connection ended. Its session lives on until its deadline, so a client can resume it
    /// (zookeeper flavor) and its ephemerals stay until then.
    pub fn disconnect(&mut self, conn: u64) {
        if let Some(c) = self.conns.remove(&conn) {
            self.sessions.unbind(c.session, conn);
        }
    }

    /// Expires every session whose deadline is at or before `now` (on the monotonic clock).
    pub fn expire_due(&mut self, now: i64) {
        for id in self.sessions.due(now) {
            self.end_session_because(id, End::Timeout);
        }
    }

    /// Ends a session now (expiry, a fault, or the embedding API): its end goes through the
    /// log, which deletes its ephemerals; then its watches go and its connection closes.
    /// Returns whether it was live.
    pub fn end_session(&mut self, id: i64) -> bool {
        self.end_session_because(id, End::Asked)
    }

    /// [`end_session`](Self::end_session), saying why (the log line names it).
    pub fn end_session_because(&mut self, id: i64, why: End) -> bool {
        if !self.sessions.begin_end(id, why) {
            return false;
        }
        self.propose(id, Decide::CloseSession { id }, Reply::Internal);
        true
    }

    /// A session's end committed: its run-time record and watches go. Returns its connection.
    pub(crate) fn forget_session(&mut self, id: i64) -> Option<u64> {
        let rt = self.sessions.remove(id)?;
        self.watches.remove_session(id);
        if let Some(r) = self.seq.replica_mut() {
            r.owners.remove(&id);
        }
        let session = format_args!("{id:#x}");
        match rt.end {
            Some(End::Closed) | None => info!(%session, "session closed"),
            Some(End::Timeout) => info!(%session, timeout_ms = rt.timeout_ms, "session expired"),
            Some(End::Fault) => info!(%session, reason = "an expire-session fault", "session expired"),
            Some(End::Asked) => info!(%session, reason = "asked (HTTP or the embedding API)", "session expired"),
        }
        rt.conn
    }

    /// Deletes empty containers that once had children and TTL nodes idle past their TTL,
    /// as ZooKeeper's ContainerManager does, through ordinary delete entries.
    pub fn collect_containers_and_ttls(&mut self, now: i64) {
        let view = self.seq.view(&self.state);
        let tree = self.state.tree();
        let empty_container = |p: &str| view.get(p).is_some_and(|n| n.num_children == 0 && n.stat.cversion > 0);
        let expired = |p: &str, ttl: i64| view.get(p).is_some_and(|n| n.num_children == 0 && now - n.stat.mtime > ttl);
        let mut victims: Vec<String> = tree.containers().filter(|p| empty_container(p)).map(str::to_string).collect();
        victims.extend(tree.ttl_nodes().filter(|&(p, ttl)| expired(p, ttl)).map(|(p, _)| p.to_string()));
        let sup = [Id { scheme: "super".into(), id: String::new() }];
        for path in victims {
            let req = Request::Delete(DeleteRequest { path: path.clone(), version: -1 });
            let ctx = Ctx { session: 0, auth: &sup };
            // Only a delete that will succeed is proposed: a failed one would take a zxid.
            let view = self.seq.view(&self.state);
            if decide(&self.state, &view, &req, &ctx).is_ok() {
                debug!(%path, "collecting container/TTL node");
                self.propose(0, Decide::Write { req: &req, auth: &sup }, Reply::Internal);
            }
        }
    }
}
