//! From a decision to a reply, by index: the proposer makes the entry, the log takes it, and
//! when the log says it is committed the one `apply` runs, the watches fire, and whoever waits
//! for that index is answered. Entries commit in index order, so the waiters are a queue.
//!
//! Standalone, `local_log` decides and orders; in a cluster the leader decides and the driver
//! orders (`sequencer.rs` says which). Either way the committed entries come here, to the one
//! `commit`.

use std::time::Instant;

use testkeeper_core::apply::Outcome;
use testkeeper_core::txn::{Entry, Txn};
use testkeeper_wire::records::connect::ConnectResponse;
use testkeeper_wire::{OpCode, Response};
use tracing::error;

use super::waiters::{Reply, Waiter};
use super::Engine;

impl Engine {
    /// Registers a waiter and returns the origin its entry will carry.
    pub(crate) fn wait(&mut self, session: i64, reply: Reply) -> u64 {
        self.sessions.one_more_in_flight(session);
        self.waiters.add(session, reply)
    }

    /// Appends what was decided under this lock in one write, and commits it when the log
    /// needs no flush first. Commits may decide more (a session's waiting writes): those are
    /// appended next, in index order.
    pub(crate) fn settle(&mut self) {
        while let Some(mut batch) = self.seq.append(self.state.last_index(), &mut self.log_info) {
            for entry in batch.drain(..) {
                self.commit(entry);
            }
            self.seq.recycle(batch);
        }
    }

    /// The syncer made every entry up to `index` durable: they commit.
    pub(crate) fn durable(&mut self, index: u64, sync_us: u64) {
        self.log_info.durable_index = index;
        self.log_info.syncs += 1;
        self.log_info.sync_us_total += sync_us;
        self.log_info.sync_us_max = self.log_info.sync_us_max.max(sync_us);
        while let Some(entry) = self.seq.take_durable(index) {
            self.commit(entry);
        }
    }

    /// Whether appended entries wait for a flush.
    pub(crate) fn needs_sync(&self) -> bool {
        self.seq.needs_sync()
    }

    /// Applies a committed entry, fires its watches and answers whoever waits for it.
    pub(crate) fn commit(&mut self, entry: Entry) {
        let entry =
            if matches!(entry.txn(), Txn::Ops(_)) && self.take_corrupt_fault() { entry.corrupted() } else { entry };
        let applied = match self.state.apply(&entry) {
            Ok(a) => a,
            Err(mismatch) => return self.diverged(&mismatch),
        };
        if let Some(tap) = &self.cfg.tap {
            tap.applied(self.waiters.node(), &entry, applied.digest);
        }
        self.seq.committed(entry.index());
        if self.cfg.digest_check_on_commit {
            let full = self.state.tree().recompute_digest();
            assert_eq!(
                full,
                applied.digest,
                "digest check on commit failed at log index {} (zxid {:#x})",
                entry.index(),
                entry.zxid()
            );
        }
        // ZooKeeper 3.9 (ZOOKEEPER-4655) names the change's zxid in the notification header.
        let event_zxid = if self.state.rules().watch_event_zxid { entry.zxid() } else { -1 };
        for t in &applied.triggers {
            for ev in self.watches.fire(t, self.state.rules()) {
                self.send_event(ev.session, ev.event_type, &ev.path, event_zxid);
            }
        }
        let waiter = self.waiters.take_committed(entry.origin());
        match applied.outcome {
            Outcome::SessionCreated(id) => {
                // Every replica keeps a run-time record of every session; the one holding the
                // client's connection binds it.
                self.session_created(id);
                if let Some(w) = waiter {
                    self.answer(w, &entry, &applied.outcome);
                }
            }
            Outcome::SessionClosed(id) => {
                if let Some(w) = waiter {
                    self.answer(w, &entry, &applied.outcome);
                }
                if let Some(conn) = self.forget_session(id) {
                    self.conns.close(conn);
                }
            }
            ref outcome => {
                if let Some(w) = waiter {
                    self.answer(w, &entry, outcome);
                }
            }
        }
        self.maybe_snapshot();
        // A cluster's syncs waiting for this index are answered (a standalone sync waits for
        // nothing: there are none).
        self.finish_syncs();
    }

    /// This replica's tree differs from the one the entry was decided against: stop serving
    /// it. Standalone that is a broken invariant (the process aborts); a cluster node stops
    /// alone and says why, as Keeper terminates.
    fn diverged(&mut self, m: &testkeeper_core::apply::DigestMismatch) {
        error!("{m}");
        if self.seq.divergence_is_fatal() {
            panic!("{m}");
        }
        self.stop_serving(m.to_string());
    }

    pub(super) fn answer(&mut self, w: Waiter, entry: &Entry, outcome: &Outcome) {
        let session = w.session;
        match w.reply {
            Reply::Client { conn, xid, shape, started } => {
                if *outcome == Outcome::Failed(testkeeper_wire::ZkError::SessionMoved) {
                    // ZooKeeper: "session moved is a connection level error" (ZOOKEEPER-710):
                    // the connection closes without a reply (FinalRequestProcessor).
                    self.conns.close(conn);
                    self.finished(conn, xid, shape.op, shape.path.as_deref(), started);
                    self.done(session);
                    return;
                }
                let (err, body) = super::reply::response(&shape, outcome, self.state.rules());
                // ZooKeeper 3.8 never answers a successful standalone check (its reply
                // serializer fails on the missing stat); the txn still takes a zxid.
                let unanswered = !self.state.rules().standalone_check_is_read && err == 0 && shape.op == OpCode::Check;
                if unanswered {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        (c.last_err, c.last_zxid) = (0, entry.zxid());
                    }
                } else {
                    self.reply(conn, xid, entry.zxid(), err, &body);
                }
                self.finished(conn, xid, shape.op, shape.path.as_deref(), started);
                self.done(session);
            }
            Reply::Handshake { conn, read_only } => {
                let Outcome::SessionCreated(id) = *outcome else {
                    unreachable!("a handshake waits for a session; entry {entry:?} gave {outcome:?}")
                };
                self.bind(conn, id);
                if let Some(rt) = self.sessions.get_mut(id) {
                    rt.conn = Some(conn);
                }
                let passwd = self.password(id);
                let timeout_ms = self.sessions.timeout_ms(id);
                let resp = ConnectResponse { protocol_version: 0, timeout_ms, session_id: id, passwd, read_only };
                self.queue_handshake(conn, &resp);
                let peer = self.conns.get(&conn).map(|c| c.peer.to_string()).unwrap_or_default();
                tracing::info!(session = format_args!("{id:#x}"), timeout_ms, %peer, "session opened");
                self.done(session);
            }
            Reply::SessionAgain { conn } => {
                // As ZooKeeper's finishSessionInit after a client's createSession: the connect
                // response once more (a client that sent the read-only flag is assumed: the
                // connection does not keep which form its handshake had).
                let passwd = self.password(session);
                let timeout_ms = self.sessions.timeout_ms(session);
                let resp = ConnectResponse {
                    protocol_version: 0,
                    timeout_ms,
                    session_id: session,
                    passwd,
                    read_only: Some(false),
                };
                let mut out = bytes::BytesMut::new();
                testkeeper_wire::frame::put_record(&mut out, &resp);
                self.send(conn, &out);
                self.done(session);
            }
            Reply::Close { conn, xid } => {
                if self.state.rules().close_is_answered {
                    self.reply(conn, xid, entry.zxid(), 0, &Response::Empty);
                }
            }
            Reply::Internal => {}
        }
    }

    /// Removes a waiter whose entry will not be applied for it; returns what its reply needs
    /// (a client's write), after closing what a refused handshake or close leaves open.
    pub(crate) fn fail_waiter(&mut self, origin: u64) -> Option<(i64, u64, i32, Instant)> {
        let w = self.waiters.take(origin)?;
        match w.reply {
            Reply::Client { conn, xid, started, .. } => Some((w.session, conn, xid, started)),
            Reply::Handshake { conn, .. } | Reply::Close { conn, .. } | Reply::SessionAgain { conn } => {
                self.conns.close(conn);
                self.done(w.session);
                None
            }
            Reply::Internal => {
                self.done(w.session);
                None
            }
        }
    }

    /// Origins of every waiter.
    pub(crate) fn waiting_origins(&self) -> Vec<u64> {
        self.waiters.origins()
    }

    /// One of `session`'s entries is answered: what waited behind it may run.
    pub(crate) fn done(&mut self, session: i64) {
        self.sessions.one_answered(session);
        self.resume(session);
    }

    /// Records a finished request's latency, and logs it: one line per request at `debug`
    /// (pings at `trace`), with the session, xid, op, path, error, zxid and latency.
    pub(crate) fn finished(
        &mut self,
        conn: u64,
        xid: i32,
        op: testkeeper_wire::OpCode,
        path: Option<&str>,
        started: Instant,
    ) {
        let us = started.elapsed().as_micros() as u64;
        let ping = op == testkeeper_wire::OpCode::Ping;
        if !ping {
            self.stats.record(op.name(), us);
        }
        let now = self.readings.wall_ms(&self.clock);
        let Some(c) = self.conns.get_mut(&conn) else { return };
        c.last_latency_ms = us / 1000;
        c.latency.record(us / 1000);
        c.last_response_ms = now;
        // Checked first: building the line costs more than the request it describes.
        let wanted =
            if ping { tracing::enabled!(tracing::Level::TRACE) } else { tracing::enabled!(tracing::Level::DEBUG) };
        if !wanted {
            return;
        }
        let (session, err, zxid) = (c.session, c.last_err, c.last_zxid);
        let err = match err {
            0 => "ok".to_string(),
            e => testkeeper_wire::ZkError::from_code(e).map_or_else(|| e.to_string(), |e| e.name().to_string()),
        };
        let session = format_args!("{session:#x}");
        let zxid = format_args!("{zxid:#x}");
        let path = path.unwrap_or("");
        if ping {
            tracing::trace!(%session, xid, op = %op.name(), %err, %zxid, latency_us = us, "request");
        } else {
            tracing::debug!(%session, xid, op = %op.name(), %path, %err, %zxid, latency_us = us, "request");
        }
    }
}
