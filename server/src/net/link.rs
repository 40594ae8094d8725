//! The request loop of a connection that has a session: one task reads, frames and decodes
//! requests, hands them to the engine, and writes what the engine queued for the connection
//! (its replies, and events that other sessions' writes fire). Reading and writing in one task
//! saves a pipelined batch the wake-up of a second task; neither waits for the other: a
//! socket that takes no more bytes leaves the task reading, and a client that sends nothing
//! leaves it writing.
//!
//! Backpressure: the socket is read only while the connection's reply backlog
//! (`engine::backlog`) is under its limit, so a client that pipelines requests and never reads
//! its replies fills TCP's window, not our memory.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::{Buf, BytesMut};
use testkeeper_wire::frame::split_frame;
use testkeeper_wire::net::{ReadHalf, WriteHalf};
use testkeeper_wire::DecodeError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;
use tokio::time::Sleep;

use super::conn::{decode, Decoded};
use super::outbox::{Outbox, Queue};
use super::writer::End;
use crate::engine::backlog::Backlog;
use crate::engine::stats::NetCounters;
use crate::engine::{Flow, Out, Shared};

/// Why the loop stopped.
pub enum Stop {
    Eof,
    /// The server closed it after a request (close, auth failure, unknown op in keeper flavor).
    Closed,
    Shutdown,
    Bad(String),
    /// The writing ended first (a close or reset on the queue, or a failed write); the
    /// socket's writing half is to be ended this way, and nothing more is written.
    Written(End),
}

/// One connection's request loop and its writing.
pub struct Link<'a> {
    pub rd: &'a mut ReadHalf,
    pub wr: &'a mut WriteHalf,
    pub rx: &'a mut UnboundedReceiver<Out>,
    pub outbox: &'a mut Outbox,
    pub buf: &'a mut BytesMut,
    pub shared: &'a Shared,
    pub conn: u64,
    pub backlog: &'a Backlog,
}

impl Link<'_> {
    /// Frames and decodes everything buffered, onto `pending`.
    fn decode_buffered(&mut self, pending: &mut VecDeque<Decoded>) {
        let max = self.shared.cfg.max_frame;
        loop {
            match split_frame(self.buf, max) {
                Ok(Some(n)) => {
                    pending.push_back(decode(&self.buf[4..n], self.shared.cfg.flavor));
                    self.buf.advance(n);
                }
                Ok(None) => break,
                Err(e) => {
                    pending.push_back(Decoded::BadFrame(DecodeError::Malformed(
                        if matches!(e, testkeeper_wire::frame::FrameError::Negative(_)) {
                            "negative frame length"
                        } else {
                            "frame larger than the maximum"
                        },
                    )));
                    break;
                }
            }
        }
    }

    /// Hands `pending` to the engine under one lock, until it is empty or the connection's
    /// reply queue is full (what is left waits for the writes). Returns whether any was
    /// handed over, or why to stop.
    fn handle(&mut self, pending: &mut VecDeque<Decoded>) -> Result<bool, Stop> {
        let mut engine = self.shared.engine();
        let conn = self.conn;
        let mut handed = false;
        while !engine.conns.out_full(conn) {
            let Some(item) = pending.pop_front() else { break };
            handed = true;
            let flow = match item {
                Decoded::Req(xid, req) => engine.handle(conn, xid, req),
                Decoded::Unknown(xid, op, body) => engine.internal_op(conn, xid, op, &body),
                Decoded::Malformed(xid, op, e) => match engine.malformed(conn, xid, op, &e.to_string()) {
                    Flow::Close => return Err(Stop::Bad(format!("malformed request (xid {xid}, op {op}): {e}"))),
                    flow => flow,
                },
                Decoded::BadFrame(e) => return Err(Stop::Bad(format!("malformed frame: {e}"))),
            };
            if flow == Flow::Close {
                return Err(Stop::Closed);
            }
        }
        Ok(handed)
    }

    /// Carries out the outbox's marker once the bytes before it are written: a close or reset
    /// ends the loop, a delay holds everything after it until `delay` fires.
    fn due_marker(&mut self, delay: &mut Option<Pin<Box<Sleep>>>) -> Option<Stop> {
        match self.outbox.due_marker()? {
            Out::Close => Some(Stop::Written(End::Shutdown)),
            Out::Reset => Some(Stop::Written(End::Reset)),
            Out::Delay(d) => {
                *delay = Some(Box::pin(tokio::time::sleep(d)));
                None
            }
            Out::Frame(_) => unreachable!("frames join the outbox's bytes"),
        }
    }

    pub async fn serve(&mut self, stop: &mut watch::Receiver<bool>) -> Stop {
        // Everything already buffered is handled under one lock, and everything that queues
        // for this connection meanwhile goes out in one write.
        let mut pending = VecDeque::new();
        let mut delay: Option<Pin<Box<Sleep>>> = None;
        let mut paused = false;
        loop {
            if delay.is_none() && self.outbox.take_queued(self.rx) == Queue::Closed {
                // The engine let go of the connection (it stopped).
                return Stop::Shutdown;
            }
            if let Some(stop) = self.due_marker(&mut delay) {
                return stop;
            }
            if pending.is_empty() {
                self.decode_buffered(&mut pending);
            }
            if !pending.is_empty() {
                match self.handle(&mut pending) {
                    Err(stop) => return stop,
                    // Its replies are queued: take them and write them before waiting.
                    Ok(true) => continue,
                    Ok(false) => {}
                }
            }
            let full = self.backlog.is_full(0);
            let read = pending.is_empty() && !full;
            if full && !paused {
                NetCounters::bump(&self.shared.net.reads_paused);
                self.backlog.paused();
            }
            paused = full;
            let (write, take) = (!self.outbox.bytes().is_empty(), delay.is_none() && !self.outbox.has_marker());
            tokio::select! {
                // In order, never at random: a seeded simulation must replay (docs/sim.md).
                biased;
                r = self.wr.write(self.outbox.bytes()), if write => match r {
                    Ok(n) if n > 0 => {
                        self.outbox.advance(n);
                        self.backlog.written(n);
                    }
                    _ => return Stop::Written(End::Shutdown),
                },
                () = async { if let Some(d) = delay.as_mut() { d.await } }, if delay.is_some() => delay = None,
                out = self.rx.recv(), if take => match out {
                    Some(out) => self.outbox.push(out),
                    None => return Stop::Shutdown,
                },
                r = self.rd.read_buf(self.buf), if read => match r {
                    Ok(0) => return if self.buf.is_empty() { Stop::Eof } else { Stop::Bad("connection closed inside a frame".into()) },
                    Ok(_) => {}
                    Err(e) => return Stop::Bad(format!("read error: {e}")),
                },
                _ = stop.changed() => return Stop::Shutdown,
            }
        }
    }
}
