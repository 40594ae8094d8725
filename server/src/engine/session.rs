//! Sessions at run time: the handshake (new session, or resumption in zookeeper flavor),
//! disconnects, expiry by deadline, and the container/TTL collector that runs on the same tick.

use sha2::{Digest, Sha256};
use testkeeper_wire::records::connect::{ConnectRequest, ConnectResponse, PASSWORD_LEN};
use testkeeper_wire::records::data::DeleteRequest;
use testkeeper_wire::{Id, Request};
use tracing::{debug, info, warn};

use super::Engine;
use crate::core::apply::Outcome;
use crate::core::prepare::Ctx;
use crate::core::txn::Txn;

/// A session's run-time record (what is not replicated state).
#[derive(Debug, Clone)]
pub struct SessionRt {
    pub timeout_ms: i32,
    pub passwd: Vec<u8>,
    /// The connection currently bound to the session, if any.
    pub conn: Option<u64>,
    /// When the session expires unless touched, in ms since the epoch.
    pub deadline_ms: i64,
}

/// The outcome of a handshake.
#[derive(Debug)]
pub enum Handshake {
    /// Send the response and serve the session.
    Accept(ConnectResponse),
    /// Send the response (timeout 0: session expired) and close.
    Reject(ConnectResponse),
    /// Close without a response.
    Refuse(&'static str),
}

impl Engine {
    fn password(&self, session: i64) -> Vec<u8> {
        if !self.state.rules.zookeeper_sessions {
            // Keeper always answers 16 zero bytes.
            return vec![0; PASSWORD_LEN];
        }
        let mut h = Sha256::new();
        h.update(self.secret.to_le_bytes());
        h.update(session.to_le_bytes());
        h.finalize()[..PASSWORD_LEN].to_vec()
    }

    /// Handles a ConnectRequest on connection `conn`.
    pub fn connect(&mut self, conn: u64, req: &ConnectRequest) -> Handshake {
        let zk = self.state.rules.zookeeper_sessions;
        // ZooKeeper 3.8 appends the readOnly byte only for a client that sent one: a 44-byte
        // ConnectRequest ("old client", e.g. ClickHouse) gets a 36-byte reply, as from Keeper.
        let read_only = if zk && req.read_only.is_some() { Some(false) } else { None };
        if zk && req.last_zxid_seen > self.state.zxid {
            // ZooKeeper: "Refusing session request ... client must try another server".
            return Handshake::Refuse("client has seen a zxid this server has not");
        }
        let timeout_ms = self.cfg.negotiate_timeout(req.timeout_ms);
        let now = self.clock.now_ms();
        if zk && req.session_id != 0 {
            let valid = self.sessions.get(&req.session_id).is_some_and(|s| s.passwd == req.passwd);
            if !valid {
                debug!(
                    session = format_args!("{:#x}", req.session_id),
                    "resume refused: session expired or bad password"
                );
                return Handshake::Reject(ConnectResponse {
                    protocol_version: 0,
                    timeout_ms: 0,
                    session_id: 0,
                    passwd: vec![0; PASSWORD_LEN],
                    read_only,
                });
            }
            // Watches belong to the connection in ZooKeeper (ServerCnxn is the Watcher): the
            // new one starts with none, and the client re-sends them with setWatches.
            self.watches.remove_session(req.session_id);
            let s = self.sessions.get_mut(&req.session_id).expect("checked above");
            let old = s.conn.replace(conn);
            s.timeout_ms = timeout_ms;
            s.deadline_ms = now + i64::from(timeout_ms);
            let passwd = s.passwd.clone();
            if let Some(old) = old.filter(|o| *o != conn) {
                // The session moved: the old connection is closed, as ZooKeeper does.
                if let Some(c) = self.conns.get_mut(&old) {
                    c.session = 0;
                }
                self.close_conn(old);
            }
            self.bind(conn, req.session_id);
            return Handshake::Accept(ConnectResponse {
                protocol_version: 0,
                timeout_ms,
                session_id: req.session_id,
                passwd,
                read_only,
            });
        }
        let txn = self.state.prepare_create_session(timeout_ms);
        let (_, applied) = self.commit(0, txn);
        let Outcome::SessionCreated(id) = applied.outcome else { unreachable!("create session yields a session") };
        let passwd = self.password(id);
        self.sessions.insert(
            id,
            SessionRt {
                timeout_ms,
                passwd: passwd.clone(),
                conn: Some(conn),
                deadline_ms: now + i64::from(timeout_ms),
            },
        );
        self.bind(conn, id);
        info!(session = format_args!("{id:#x}"), timeout_ms, "session established");
        Handshake::Accept(ConnectResponse { protocol_version: 0, timeout_ms, session_id: id, passwd, read_only })
    }

    fn bind(&mut self, conn: u64, session: i64) {
        let zk = self.state.rules.zookeeper_sessions;
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
        let now = self.clock.now_ms();
        if let Some(s) = self.sessions.get_mut(&session) {
            s.deadline_ms = now + i64::from(s.timeout_ms);
        }
    }

    /// A connection ended. Its session lives on until its deadline, so a client can resume it
    /// (zookeeper flavor) and its ephemerals stay until then.
    pub fn disconnect(&mut self, conn: u64) {
        if let Some(c) = self.conns.remove(&conn) {
            if let Some(s) = self.sessions.get_mut(&c.session) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
        }
    }

    /// Expires every session whose deadline is at or before `now`.
    pub fn expire_due(&mut self, now: i64) {
        let mut due: Vec<i64> = self.sessions.iter().filter(|(_, s)| s.deadline_ms <= now).map(|(id, _)| *id).collect();
        due.sort_unstable();
        for id in due {
            info!(session = format_args!("{id:#x}"), "session expired");
            self.end_session(id);
        }
    }

    /// Ends a session now (expiry, close, or the embedding API): deletes its ephemerals
    /// through the log, drops its watches, and closes its connection. Returns whether it existed.
    pub fn end_session(&mut self, id: i64) -> bool {
        let Some(rt) = self.sessions.remove(&id) else { return false };
        if self.state.sessions.contains_key(&id) {
            let txn = self.state.prepare_close_session(id);
            self.commit(id, txn);
        }
        self.watches.remove_session(id);
        if let Some(conn) = rt.conn {
            self.close_conn(conn);
        }
        true
    }

    /// Deletes empty containers that once had children and TTL nodes idle past their TTL,
    /// as ZooKeeper's ContainerManager does, through ordinary delete entries.
    pub fn collect_containers_and_ttls(&mut self, now: i64) {
        let tree = &self.state.tree;
        let mut victims: Vec<String> = tree
            .containers()
            .filter(|p| tree.get(p).is_some_and(|n| n.num_children() == 0 && n.stat.cversion > 0))
            .map(str::to_string)
            .collect();
        victims.extend(
            tree.ttl_nodes()
                .filter(|&(p, ttl)| tree.get(p).is_some_and(|n| n.num_children() == 0 && now - n.stat.mtime > ttl))
                .map(|(p, _)| p.to_string()),
        );
        let sup = [Id { scheme: "super".into(), id: String::new() }];
        for path in victims {
            let req = Request::Delete(DeleteRequest { path: path.clone(), version: -1 });
            let txn = self.state.prepare(&req, &Ctx { session: 0, auth: &sup });
            if matches!(txn, Txn::Ops(_)) {
                debug!(%path, "collected container/TTL node");
                self.commit(0, txn);
            } else {
                warn!(%path, ?txn, "container/TTL collection skipped");
            }
        }
    }
}
