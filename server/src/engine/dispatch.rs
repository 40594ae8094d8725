//! One request from the wire to its place in the session's order, and what runs when its turn
//! comes: a write is proposed (`commit`), anything else is answered here from the committed
//! tree and the per-server tables.

use testkeeper_core::acl;
use testkeeper_core::flavor::Rules;
use testkeeper_core::pending::View;
use testkeeper_core::prepare::{decide, Ctx};
use testkeeper_core::propose::Decide;
use testkeeper_core::watches::WatchKind;
use testkeeper_wire::opcode::Class;
use testkeeper_wire::records::header::{event_type, ReplyHeader};
use testkeeper_wire::records::watches::{add_watch_mode, SetWatches2};
use testkeeper_wire::{OpCode, Request, Response, ZkError};
use tracing::{debug, warn};

use super::faults::Step;
use super::order::{Queued, Work};
use super::reply::Shape;
use super::waiters::Reply;
use super::{reply, Engine};

/// What the connection does after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Close the connection now (what is already queued is still written).
    Close,
}

/// Whether `req` goes through the log (and consumes a zxid) rather than being answered
/// locally: its class in the per-op table (`testkeeper_wire::opcode`), and for a check, the
/// flavor.
pub(crate) fn is_write(req: &Request, rules: &Rules) -> bool {
    match req.op().class() {
        Class::Write => true,
        Class::Check => !rules.standalone_check_is_read,
        Class::Read | Class::Local | Class::Internal => false,
    }
}

impl Engine {
    /// Whether this flavor's real server knows `op` at all.
    pub fn supports(&self, op: OpCode) -> bool {
        self.state.rules().knows_op(op)
    }

    /// Handles one decoded request from connection `conn`.
    pub fn handle(&mut self, conn: u64, xid: i32, req: Request) -> Flow {
        let started = self.started_at();
        if self.stopped {
            return Flow::Close;
        }
        let Some((session, blackholed)) = self.conns.get(&conn).map(|c| (c.session, c.blackholed)) else {
            return Flow::Close;
        };
        if blackholed {
            // A blackhole fault fired on this connection: what it sends is lost unread.
            return Flow::Continue;
        }
        if !self.sessions.is_live(session) {
            self.reply(conn, xid, self.state.zxid(), ZkError::SessionExpired.code(), &Response::Empty);
            return Flow::Close;
        }
        if !is_write(&req, self.state.rules()) && self.leads() && self.seq.is_raft() {
            let me = self.waiters.node();
            if self.session_moved_from(session, me) {
                // ZooKeeper's leader runs every request of its own clients through the session
                // check (PrepRequestProcessor): the session lives on another server now, and the
                // SessionMovedException closes this connection without a reply.
                debug!(session = format_args!("{session:#x}"), "session moved to another node: closing");
                return Flow::Close;
            }
        }
        self.touch(session);
        self.note_activity(session);
        self.stats.packets_received += 1;
        let op = req.op();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.received += 1;
            c.last_op = op.name();
            c.last_xid = xid;
        }
        if !self.supports(op) {
            return self.unknown_op(conn, xid, op as i32);
        }
        // Fault hook, before the request does anything: a fault may replace it outright.
        let step = match self.fault_before(conn, session, xid, &req, started) {
            Step::Done(flow) => return flow,
            step => step,
        };
        let work = if self.state.rules().multi_sub_ops_restricted && !zookeeper_multi_ok(&req) {
            // ZooKeeper's MultiOperationRecord refuses other sub-op types while deserializing:
            // MARSHALLINGERROR, nothing applied, no zxid, connection kept (measured on 3.8.0).
            Work::Fail(ZkError::MarshallingError.code())
        } else {
            Work::Req(req)
        };
        self.submit(session, Queued { conn, xid, work, started });
        // Fault hook, after the request took its place (a muted connection closes now).
        self.fault_after(step)
    }

    /// An opcode the flavor's server does not know: ZooKeeper answers UNIMPLEMENTED (zxid -1),
    /// in order, and then closes the connection (measured on 3.8.0); Keeper fails to parse it
    /// and drops the connection at once, without a reply.
    pub fn unknown_op(&mut self, conn: u64, xid: i32, op: i32) -> Flow {
        if !self.state.rules().unknown_op_replies {
            warn!(op, "unknown opcode: closing the connection, as Keeper does");
            return Flow::Close;
        }
        let session = self.conns.get(&conn).map_or(0, |c| c.session);
        let q = Queued { conn, xid, work: Work::Unknown(op), started: self.started_at() };
        self.submit_or_run(session, q);
        Flow::Continue
    }

    /// A request whose header decoded but whose body did not: ZooKeeper answers
    /// MARSHALLINGERROR, in order, and keeps the connection; Keeper's deserializer throws and
    /// the connection closes.
    pub fn malformed(&mut self, conn: u64, xid: i32, op: i32, why: &str) -> Flow {
        if !self.state.rules().malformed_request_answered {
            warn!(op, why, "malformed request: closing the connection, as Keeper does");
            return Flow::Close;
        }
        debug!(op, why, "malformed request: replying MARSHALLINGERROR, as ZooKeeper does");
        let session = self.conns.get(&conn).map_or(0, |c| c.session);
        let q = Queued { conn, xid, work: Work::Fail(ZkError::MarshallingError.code()), started: self.started_at() };
        self.submit_or_run(session, q);
        Flow::Continue
    }

    /// Carries out a request whose turn has come.
    pub(crate) fn run(&mut self, session: i64, q: Queued) {
        let Queued { conn, xid, work, started } = q;
        match work {
            Work::Fail(code) => {
                self.reply(conn, xid, self.state.zxid(), code, &Response::Empty);
            }
            Work::FailWrite(op, e) => {
                let shape = Shape { op, subs: Vec::new(), path: None };
                self.propose(session, Decide::Fail(e), Reply::Client { conn, xid, shape, started });
            }
            Work::SessionAgain => self.propose(session, Decide::Noop, Reply::SessionAgain { conn }),
            Work::Sasl => {
                // SetSASLResponse with a null token: its buffer's -1 length is all the body.
                self.reply(conn, xid, 0, 0, &Response::Number(-1));
            }
            Work::Unknown(op) => {
                debug!(op, "unknown opcode: replying UNIMPLEMENTED and closing, as ZooKeeper does");
                self.reply(conn, xid, -1, ZkError::Unimplemented.code(), &Response::Empty);
                self.conns.close(conn);
            }
            Work::Req(Request::Close) => {
                self.sessions.begin_end(session, super::sessions::End::Closed);
                self.propose(session, Decide::Write { req: &Request::Close, auth: &[] }, Reply::Close { conn, xid });
            }
            Work::Req(Request::Sync(p)) if self.seq.syncs_with_leader() => {
                if self.cfg.broken == Some(crate::broken::Broken::StaleReadAfterSync) {
                    // Deliberately broken (chaos self-test): answered before catching up.
                    self.reply(conn, xid, self.state.zxid(), 0, &Response::Path(p.path));
                    self.finished(conn, xid, OpCode::Sync, None, started);
                } else if self.state.rules().zookeeper_sessions {
                    // ZooKeeper: catch up with the leader's last proposal, then answer.
                    self.start_sync(conn, xid, session, p.path, started);
                } else {
                    // Keeper: a round trip through the log.
                    let shape = Shape::of(&Request::Sync(p));
                    self.propose(session, Decide::Noop, Reply::Client { conn, xid, shape, started });
                }
            }
            Work::Req(req)
                if self.is_write_req(&req) && self.disk.as_mut().is_some_and(super::disk::DiskGuard::low) =>
            {
                // The data directory's filesystem is nearly full: refused as a read-only
                // ZooKeeper server refuses a write, before anything is proposed or logged.
                let (op, path) = (req.op(), req.path().map(str::to_string));
                if let Some(d) = self.disk.as_mut() {
                    d.refused += 1;
                }
                self.reply(conn, xid, self.state.zxid(), ZkError::NotReadOnly.code(), &Response::Empty);
                self.finished(conn, xid, op, path.as_deref(), started);
            }
            Work::Req(req) if self.is_write_req(&req) => {
                let auth = self.conns.auth_of(conn);
                let shape = Shape::of(&req);
                self.propose(
                    session,
                    Decide::Write { req: &req, auth: &auth },
                    Reply::Client { conn, xid, shape, started },
                );
            }
            Work::Req(req) => {
                let op = req.op();
                // The path outlives the request only for the debug log line.
                let path = tracing::enabled!(tracing::Level::DEBUG).then(|| req.path().map(str::to_string)).flatten();
                if self.catching_up() || (!self.has_leader() && !self.state.rules().zookeeper_sessions) {
                    // Keeper answers reads with CONNECTIONLOSS while there is no leader; a
                    // follower catching up with its leader answers them so too, rather than
                    // from a stale tree (cluster/read_gate.rs).
                    self.reply(conn, xid, self.state.zxid(), ZkError::ConnectionLoss.code(), &Response::Empty);
                } else {
                    self.local(conn, session, xid, req);
                }
                self.finished(conn, xid, op, path.as_deref(), started);
            }
        }
    }

    /// Answers a read or a connection-local request from the committed state.
    fn local(&mut self, conn: u64, session: i64, xid: i32, req: Request) {
        let zxid = self.state.zxid();
        let rules = self.state.rules();
        let auth_zk = rules.auth_zookeeper_style;
        match req {
            Request::Ping => self.reply(conn, xid, zxid, 0, &Response::Empty),
            Request::Auth(a) => {
                // ZooKeeper answers auth with zxid 0 (measured on 3.8.0).
                let zxid = if auth_zk { 0 } else { zxid };
                match acl::authenticate(&a.scheme, &a.auth, self.cfg.super_digest.as_deref(), auth_zk) {
                    Ok(id) => {
                        if let Some(c) = self.conns.get_mut(&conn) {
                            if !c.auth.contains(&id) {
                                c.auth.push(id);
                            }
                        }
                        self.reply(conn, xid, zxid, 0, &Response::Empty);
                    }
                    Err(e) => {
                        self.reply(conn, xid, zxid, e.code(), &Response::Empty);
                        // ZooKeeper closes the connection after AUTHFAILED; Keeper keeps it.
                        if auth_zk {
                            self.conns.close(conn);
                        }
                    }
                }
            }
            Request::SetWatches(w) => {
                let w2 = SetWatches2 {
                    relative_zxid: w.relative_zxid,
                    data_watches: w.data_watches,
                    exist_watches: w.exist_watches,
                    child_watches: w.child_watches,
                    ..Default::default()
                };
                self.set_watches(conn, session, xid, w2);
            }
            Request::SetWatches2(w) => self.set_watches(conn, session, xid, w),
            Request::AddWatch(r) => {
                let kind = match r.mode {
                    add_watch_mode::PERSISTENT_RECURSIVE => WatchKind::Recursive,
                    add_watch_mode::PERSISTENT => WatchKind::Persistent,
                    // ZooKeeper's AddWatchMode.fromMode throws: MARSHALLINGERROR, no watch (measured).
                    _ => {
                        self.reply(conn, xid, zxid, ZkError::MarshallingError.code(), &Response::Empty);
                        return;
                    }
                };
                self.watches.add(kind, &r.path, session, self.state.rules());
                self.reply(conn, xid, zxid, 0, &Response::Number(0));
            }
            Request::CheckWatches(r) => {
                let found = if self.state.rules().check_watches_any_session {
                    self.watches.has_any(&r.path, r.watcher_type)
                } else {
                    self.watches.has(session, &r.path, r.watcher_type)
                };
                let err = if found { 0 } else { ZkError::NoWatcher.code() };
                self.reply(conn, xid, zxid, err, &Response::Empty);
            }
            Request::RemoveWatches(r) => {
                let err =
                    if self.watches.remove(session, &r.path, r.watcher_type) { 0 } else { ZkError::NoWatcher.code() };
                self.reply(conn, xid, zxid, err, &Response::Empty);
            }
            Request::Reconfig => self.reply(conn, xid, zxid, ZkError::ReconfigDisabled.code(), &Response::Empty),
            req if req.op().class() == Class::Check => {
                // Keeper serves a standalone check locally, like a read: no zxid.
                let auth = self.conns.auth_of(conn);
                let view = View::committed(self.state.tree());
                let err =
                    decide(&self.state, &view, &req, &Ctx { session, auth: &auth }).err().map_or(0, ZkError::code);
                self.reply(conn, xid, zxid, err, &Response::Empty);
            }
            req => {
                let auth = self.conns.auth_of(conn);
                if let Some(result) = self.state.read_borrowed(&req, &auth) {
                    // getData and listings: encoded from the tree, no owned copy in between.
                    let status = result.as_ref().map(|_| ()).map_err(|e| *e);
                    for (kind, path) in reply::watches_to_register(&req, status) {
                        self.watches.add(kind, path, session, self.state.rules());
                    }
                    let err = status.err().map_or(0, ZkError::code);
                    let header = ReplyHeader { xid, zxid, err };
                    if self.conns.reply_with(conn, header, |out| result.iter().for_each(|b| b.encode(out))) {
                        self.stats.packets_sent += 1;
                    }
                    return;
                }
                let result = self.state.read(&req, &auth, session);
                let status = result.as_ref().map(|_| ()).map_err(|e| *e);
                for (kind, path) in reply::watches_to_register(&req, status) {
                    self.watches.add(kind, path, session, self.state.rules());
                }
                match result {
                    Ok(body) => self.reply(conn, xid, zxid, 0, &body),
                    Err(e) => self.reply(conn, xid, zxid, e.code(), &Response::Empty),
                }
            }
        }
    }

    /// Re-registers watches after a reconnect, firing at once those whose change the client
    /// missed (ZooKeeper `DataTree.setWatches`).
    fn set_watches(&mut self, conn: u64, session: i64, xid: i32, w: SetWatches2) {
        let rel = w.relative_zxid;
        let rules = self.state.rules().clone();
        let tree = self.state.tree();
        let mut fire = Vec::new();
        let mut add = Vec::new();
        for p in &w.data_watches {
            match tree.get(p) {
                None => fire.push((event_type::NODE_DELETED, p.clone())),
                Some(n) if n.stat.mzxid > rel => fire.push((event_type::NODE_DATA_CHANGED, p.clone())),
                Some(_) => add.push((WatchKind::Data, p)),
            }
        }
        for p in &w.exist_watches {
            match tree.get(p) {
                Some(_) => fire.push((event_type::NODE_CREATED, p.clone())),
                None => add.push((WatchKind::Data, p)),
            }
        }
        for p in &w.child_watches {
            match tree.get(p) {
                None => fire.push((event_type::NODE_DELETED, p.clone())),
                Some(n) if n.stat.pzxid > rel => {
                    let ty = if rules.set_watches_child_change_is_data_changed {
                        event_type::NODE_DATA_CHANGED
                    } else {
                        event_type::NODE_CHILDREN_CHANGED
                    };
                    fire.push((ty, p.clone()));
                }
                Some(_) => add.push((WatchKind::Child, p)),
            }
        }
        add.extend(w.persistent_watches.iter().map(|p| (WatchKind::Persistent, p)));
        add.extend(w.persistent_recursive_watches.iter().map(|p| (WatchKind::Recursive, p)));
        for (kind, p) in add {
            self.watches.add(kind, p, session, &rules);
        }
        let zxid = self.state.zxid();
        if rules.set_watches_reply_first {
            self.reply(conn, xid, zxid, 0, &Response::Empty);
        }
        for (ty, p) in fire {
            self.send_event(session, ty, &p, -1);
        }
        if !rules.set_watches_reply_first {
            self.reply(conn, xid, zxid, 0, &Response::Empty);
        }
    }
}

/// Whether a multi/multiRead holds only the sub-op types ZooKeeper 3.8 accepts there: writes
/// (create variants, delete, setData, check) in a multi, getData and getChildren in a multiRead.
fn zookeeper_multi_ok(req: &Request) -> bool {
    match req {
        Request::Multi(ops) => ops.iter().all(|op| {
            matches!(
                op.op(),
                OpCode::Create
                    | OpCode::Create2
                    | OpCode::CreateContainer
                    | OpCode::CreateTtl
                    | OpCode::Delete
                    | OpCode::SetData
                    | OpCode::Check
            )
        }),
        Request::MultiRead(ops) => ops.iter().all(|op| matches!(op.op(), OpCode::GetData | OpCode::GetChildren)),
        _ => true,
    }
}
