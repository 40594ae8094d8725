//! One request to its reply: the single path every client request takes through the engine.

use std::time::Instant;

use testkeeper_wire::records::header::event_type;
use testkeeper_wire::records::watches::{add_watch_mode, SetWatches2};
use testkeeper_wire::{OpCode, Request, Response, ZkError};
use tracing::{debug, warn};

use super::{reply, Engine};
use crate::core::acl;
use crate::core::prepare::Ctx;
use crate::core::txn::Txn;
use crate::core::watches::WatchKind;
use crate::faults::hook::Step;

/// What the connection does after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Close the connection once what is queued has been written.
    Close,
}

impl Engine {
    /// Whether this flavor's real server knows `op` at all.
    pub fn supports(&self, op: OpCode) -> bool {
        self.state.rules.knows_op(op)
    }

    /// Handles one decoded request from connection `conn`.
    pub fn handle(&mut self, conn: u64, xid: i32, req: Request) -> Flow {
        let started = Instant::now();
        let Some(session) = self.conns.get(&conn).map(|c| c.session) else { return Flow::Close };
        if !self.sessions.contains_key(&session) {
            self.reply(conn, xid, self.state.zxid, ZkError::SessionExpired.code(), &Response::Empty);
            return Flow::Close;
        }
        self.touch(session);
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
        let step = match self.fault_before(conn, session, xid, &req) {
            Step::Done(flow) => return flow,
            step => step,
        };
        if self.state.rules.multi_sub_ops_restricted && !zookeeper_multi_ok(&req) {
            // ZooKeeper's MultiOperationRecord refuses other sub-op types while deserializing:
            // MARSHALLINGERROR, nothing applied, no zxid, connection kept (measured on 3.8.0).
            self.reply(conn, xid, self.state.zxid, ZkError::MarshallingError.code(), &Response::Empty);
            return Flow::Continue;
        }
        let flow = self.dispatch(conn, session, xid, req);
        let us = started.elapsed().as_micros() as u64;
        if op != OpCode::Ping {
            self.stats.record(op.name(), us);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.last_latency_ms = us / 1000;
        }
        // Fault hook, after the reply was queued (or, muted, discarded).
        self.fault_after(step, flow)
    }

    /// An opcode the flavor's server does not know: ZooKeeper answers UNIMPLEMENTED (zxid -1)
    /// and then closes the connection (measured on 3.8.0); Keeper fails to parse it and drops
    /// the connection without a reply.
    pub fn unknown_op(&mut self, conn: u64, xid: i32, op: i32) -> Flow {
        if self.state.rules.unknown_op_replies {
            debug!(op, "unknown opcode: replying UNIMPLEMENTED and closing, as ZooKeeper does");
            self.reply(conn, xid, -1, ZkError::Unimplemented.code(), &Response::Empty);
        } else {
            warn!(op, "unknown opcode: closing the connection, as Keeper does");
        }
        Flow::Close
    }

    /// A request whose header decoded but whose body did not: ZooKeeper answers
    /// MARSHALLINGERROR and keeps the connection; Keeper's deserializer throws and the
    /// connection closes.
    pub fn malformed(&mut self, conn: u64, xid: i32, op: i32, why: &str) -> Flow {
        if self.state.rules.malformed_request_answered {
            debug!(op, why, "malformed request: replying MARSHALLINGERROR, as ZooKeeper does");
            let zxid = self.state.zxid;
            self.reply(conn, xid, zxid, ZkError::MarshallingError.code(), &Response::Empty);
            Flow::Continue
        } else {
            warn!(op, why, "malformed request: closing the connection, as Keeper does");
            Flow::Close
        }
    }

    fn dispatch(&mut self, conn: u64, session: i64, xid: i32, req: Request) -> Flow {
        let zxid = self.state.zxid;
        let rules = &self.state.rules;
        let (auth_zk, close_answered, check_is_read) =
            (rules.auth_zookeeper_style, rules.close_is_answered, rules.standalone_check_is_read);
        match req {
            Request::Ping => self.reply(conn, xid, zxid, 0, &Response::Empty),
            Request::Auth(a) => {
                // ZooKeeper answers auth with zxid 0 (measured on 3.8.0).
                let zxid = if auth_zk { 0 } else { zxid };
                match acl::authenticate(&a.scheme, &a.auth, self.cfg.super_digest.as_deref()) {
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
                            return Flow::Close;
                        }
                    }
                }
            }
            Request::Close => {
                let txn = self.state.prepare_close_session(session);
                let (entry, _) = self.commit(session, txn);
                self.sessions.remove(&session);
                self.watches.remove_session(session);
                // Keeper closes the socket without answering the close.
                if close_answered {
                    self.reply(conn, xid, entry.zxid, 0, &Response::Empty);
                }
                return Flow::Close;
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
                        return Flow::Continue;
                    }
                };
                self.watches.add(kind, &r.path, session, &self.state.rules);
                self.reply(conn, xid, zxid, 0, &Response::Number(0));
            }
            Request::CheckWatches(r) => {
                let found = if self.state.rules.check_watches_any_session {
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
            Request::Check(_) | Request::CheckNotExists(_) | Request::CheckStat(_) if check_is_read => {
                // Keeper serves a standalone check locally, like a read: no zxid.
                let auth = self.auth_of(conn);
                let err = match self.state.prepare(&req, &Ctx { session, auth: &auth }) {
                    Txn::Failed(e) => e.code(),
                    _ => 0,
                };
                self.reply(conn, xid, zxid, err, &Response::Empty);
            }
            req if is_read(&req) => {
                let auth = self.auth_of(conn);
                let result = self.state.read(&req, &auth, session);
                for (kind, path) in reply::watches_to_register(&req, &result) {
                    self.watches.add(kind, path, session, &self.state.rules);
                }
                match result {
                    Ok(body) => self.reply(conn, xid, zxid, 0, &body),
                    Err(e) => self.reply(conn, xid, zxid, e.code(), &Response::Empty),
                }
            }
            req => {
                let auth = self.auth_of(conn);
                let txn = self.state.prepare(&req, &Ctx { session, auth: &auth });
                let (entry, applied) = self.commit(session, txn);
                let (err, body) = reply::response(&req, &applied.outcome);
                // ZooKeeper 3.8 never answers a successful standalone check (its reply
                // serializer fails on the missing stat); the txn still takes a zxid.
                if !check_is_read && err == 0 && matches!(req, Request::Check(_)) {
                    return Flow::Continue;
                }
                self.reply(conn, xid, entry.zxid, err, &body);
            }
        }
        Flow::Continue
    }

    /// Re-registers watches after a reconnect, firing at once those whose change the client
    /// missed (ZooKeeper `DataTree.setWatches`).
    fn set_watches(&mut self, conn: u64, session: i64, xid: i32, w: SetWatches2) {
        let rel = w.relative_zxid;
        let rules = self.state.rules.clone();
        let mut fire = Vec::new();
        for p in &w.data_watches {
            match self.state.tree.get(p) {
                None => fire.push((event_type::NODE_DELETED, p.clone())),
                Some(n) if n.stat.mzxid > rel => fire.push((event_type::NODE_DATA_CHANGED, p.clone())),
                Some(_) => self.watches.add(WatchKind::Data, p, session, &rules),
            }
        }
        for p in &w.exist_watches {
            match self.state.tree.get(p) {
                Some(_) => fire.push((event_type::NODE_CREATED, p.clone())),
                None => self.watches.add(WatchKind::Data, p, session, &rules),
            }
        }
        for p in &w.child_watches {
            match self.state.tree.get(p) {
                None => fire.push((event_type::NODE_DELETED, p.clone())),
                Some(n) if n.stat.pzxid > rel => {
                    let ty = if rules.set_watches_child_change_is_data_changed {
                        event_type::NODE_DATA_CHANGED
                    } else {
                        event_type::NODE_CHILDREN_CHANGED
                    };
                    fire.push((ty, p.clone()));
                }
                Some(_) => self.watches.add(WatchKind::Child, p, session, &rules),
            }
        }
        for p in &w.persistent_watches {
            self.watches.add(WatchKind::Persistent, p, session, &rules);
        }
        for p in &w.persistent_recursive_watches {
            self.watches.add(WatchKind::Recursive, p, session, &rules);
        }
        let zxid = self.state.zxid;
        if rules.set_watches_reply_first {
            self.reply(conn, xid, zxid, 0, &Response::Empty);
        }
        for (ty, p) in fire {
            self.send_event(session, ty, &p);
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

fn is_read(req: &Request) -> bool {
    matches!(
        req,
        Request::Exists(_)
            | Request::GetData(_)
            | Request::GetAcl(_)
            | Request::GetChildren(_)
            | Request::GetChildren2(_)
            | Request::Sync(_)
            | Request::MultiRead(_)
            | Request::GetEphemerals(_)
            | Request::GetAllChildrenNumber(_)
            | Request::WhoAmI
            | Request::FilteredList(_)
            | Request::FilteredListWithStatsAndData(_)
            | Request::ListRecursive(_)
    )
}
