//! The I/O side of a client: the handshake, then one task that writes requests and reads
//! replies over one [`Stream`] (TCP, or a simulation's pipe).
//!
//! The task runs a writer and a reader as two futures under one `select!`, sharing the pending
//! queues. When either ends (socket error, protocol error, `close()` done, `Client` dropped)
//! the other is dropped with it, the socket closes, and every waiting request is failed with
//! the one [`LossReason`]. Writer and reader are separate futures, not one loop, so a large
//! request being written never stops replies from being read (the server could otherwise block
//! writing to us while we block writing to it).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::time::{sleep_until, timeout, Instant};

use super::error::{ClientError, LossReason};
use super::options::ConnectOptions;
use super::pending::{Pending, PendingQueues, Waiter};
use super::reply::{Event, Reply, Wanted};
use crate::frame::{put_record, put_request, split_frame, FrameError};
use crate::jute::{Decode, Reader};
use crate::net::{ReadHalf, Stream, WriteHalf};
use crate::opcode::{OpCode, PING_XID, WATCH_XID};
use crate::records::connect::ConnectResponse;
use crate::records::header::ReplyHeader;
use crate::request::Request;

/// Stop coalescing queued requests into one write past this many bytes.
const WRITE_BATCH: usize = 64 * 1024;

/// A request on its way to the writer.
pub(crate) struct Command {
    /// `Some` sends with exactly this xid; `None` takes the next sequential one.
    pub xid: Option<i32>,
    pub req: Request,
    pub wanted: Wanted,
    pub waiter: Waiter,
}

/// State the `Client` reads while the task runs.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    closed: AtomicBool,
    reason: Mutex<Option<LossReason>>,
}

impl Shared {
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Why the connection ended, if it has.
    pub fn reason(&self) -> Option<LossReason> {
        self.reason.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The error a request gets once the connection is gone.
    pub fn loss(&self) -> ClientError {
        ClientError::ConnectionLoss(self.reason().unwrap_or(LossReason::Dropped))
    }

    fn set(&self, reason: LossReason) {
        self.reason.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(reason);
        self.closed.store(true, Ordering::Release);
    }
}

/// A completed handshake.
pub(crate) struct Handshake {
    pub response: ConnectResponse,
    /// Body length of the reply: 36 or 37 on real servers.
    pub len: usize,
    pub stream: Stream,
    /// Bytes the server sent after the handshake reply, read along with it.
    pub leftover: BytesMut,
}

/// Connects and exchanges the handshake, all within `opts.connect_timeout`.
///
/// # Errors
/// `ConnectTimeout`, or `Connect` when the socket fails or the reply is not a handshake.
pub(crate) async fn handshake(addr: SocketAddr, opts: &ConnectOptions) -> Result<Handshake, ClientError> {
    let io = |what: &str, e: std::io::Error| ClientError::Connect(format!("{what} {addr}: {e}"));
    let exchange = async {
        let mut stream = Stream::connect(addr).await.map_err(|e| io("connect to", e))?;
        let mut out = BytesMut::new();
        put_record(&mut out, &opts.connect_request());
        stream.write_all(&out).await.map_err(|e| io("send handshake to", e))?;
        let mut buf = BytesMut::with_capacity(64);
        let n = loop {
            match split_frame(&buf, opts.max_frame) {
                Ok(Some(n)) => break n,
                Ok(None) => {}
                Err(e) => return Err(ClientError::Connect(format!("handshake reply: {e}"))),
            }
            if stream.read_buf(&mut buf).await.map_err(|e| io("read handshake from", e))? == 0 {
                return Err(ClientError::Connect(format!("{addr} closed the connection during the handshake")));
            }
        };
        let frame = buf.split_to(n);
        let body = &frame[4..];
        let response = ConnectResponse::decode(&mut Reader::new(body))
            .map_err(|e| ClientError::Connect(format!("handshake reply of {} bytes: {e}", body.len())))?;
        Ok(Handshake { response, len: body.len(), stream, leftover: buf })
    };
    timeout(opts.connect_timeout, exchange).await.map_err(|_| ClientError::ConnectTimeout)?
}

/// How the task runs, fixed at connect time.
pub(crate) struct RunConfig {
    /// Idle time after which the writer sends a ping; `None` never pings.
    pub ping_every: Option<Duration>,
    pub max_frame: usize,
}

/// Runs the connection until it ends, then fails everything still waiting.
pub(crate) async fn run(
    hs: Handshake,
    cfg: RunConfig,
    shared: Arc<Shared>,
    mut cmds: UnboundedReceiver<Command>,
    events: UnboundedSender<Event>,
) {
    let (mut rd, mut wr) = hs.stream.into_split();
    let pending = Mutex::new(PendingQueues::default());
    let mut inbound = Inbound { pending: &pending, events: &events, shared: &shared, seq: 0 };
    let reason = tokio::select! {
        // In order, never at random: a seeded simulation must replay (docs/sim.md).
        biased;
        r = inbound.read_loop(&mut rd, hs.leftover, cfg.max_frame) => r,
        r = write_loop(&mut wr, &mut cmds, cfg.ping_every, &pending) => r,
    };
    tracing::debug!(%reason, "client connection ended");
    // Mark closed before failing anyone, so a caller that sees the failure also sees is_closed().
    shared.set(reason.clone());
    drop((rd, wr));
    cmds.close();
    let err = ClientError::ConnectionLoss(reason);
    for p in lock(&pending).drain() {
        if let Some(w) = p.waiter {
            let _ = w.send(Err(err.clone()));
        }
    }
    while let Ok(cmd) = cmds.try_recv() {
        let _ = cmd.waiter.send(Err(err.clone()));
    }
}

fn lock(m: &Mutex<PendingQueues>) -> MutexGuard<'_, PendingQueues> {
    // Nothing that holds this lock can panic midway, but a poisoned queue is still a queue.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes commands as they come, coalescing whatever is already queued, and pings when idle.
async fn write_loop(
    wr: &mut WriteHalf,
    cmds: &mut UnboundedReceiver<Command>,
    ping_every: Option<Duration>,
    pending: &Mutex<PendingQueues>,
) -> LossReason {
    let mut next_xid: i32 = 1;
    let mut out = BytesMut::new();
    let mut last_write = Instant::now();
    loop {
        let ping_at = ping_every.map(|d| last_write + d);
        tokio::select! {
            // In order, never at random: a seeded simulation must replay (docs/sim.md).
            biased;
            cmd = cmds.recv() => {
                let Some(cmd) = cmd else { return LossReason::Dropped };
                enqueue(&mut out, cmd, &mut next_xid, pending);
                while out.len() < WRITE_BATCH {
                    let Ok(cmd) = cmds.try_recv() else { break };
                    enqueue(&mut out, cmd, &mut next_xid, pending);
                }
            }
            () = sleep_until_opt(ping_at) => {
                lock(pending).push(Pending { xid: PING_XID, op: OpCode::Ping, wanted: Wanted::HeaderOnly, waiter: None });
                put_request(&mut out, PING_XID, &Request::Ping);
            }
        }
        if let Err(e) = wr.write_all(&out).await {
            return LossReason::Io(e.to_string());
        }
        out.clear();
        last_write = Instant::now();
    }
}

/// Registers one command as pending and appends its frame.
fn enqueue(out: &mut BytesMut, cmd: Command, next_xid: &mut i32, pending: &Mutex<PendingQueues>) {
    let xid = cmd.xid.unwrap_or_else(|| {
        let xid = *next_xid;
        // Wrap back to 1 rather than into the negative xids, which are reserved.
        *next_xid = if xid == i32::MAX { 1 } else { xid + 1 };
        xid
    });
    lock(pending).push(Pending { xid, op: cmd.req.op(), wanted: cmd.wanted, waiter: Some(cmd.waiter) });
    put_request(out, xid, &cmd.req);
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The reader's state: where replies and events go, and the arrival counter.
struct Inbound<'a> {
    pending: &'a Mutex<PendingQueues>,
    events: &'a UnboundedSender<Event>,
    shared: &'a Shared,
    seq: u64,
}

impl Inbound<'_> {
    /// Reads frames until the connection ends, and says why it did.
    async fn read_loop(&mut self, rd: &mut ReadHalf, mut buf: BytesMut, max: usize) -> LossReason {
        loop {
            loop {
                let n = match split_frame(&buf, max) {
                    Ok(Some(n)) => n,
                    Ok(None) => break,
                    Err(FrameError::TooLarge { len, max }) => return LossReason::FrameTooLarge { len, max },
                    Err(e) => return LossReason::Protocol(e.to_string()),
                };
                let frame = buf.split_to(n);
                if let Err(reason) = self.dispatch(&frame[4..]) {
                    return reason;
                }
            }
            buf.reserve(8 * 1024);
            match rd.read_buf(&mut buf).await {
                Ok(0) => return LossReason::Eof,
                Ok(_) => {}
                Err(e) => return LossReason::Io(e.to_string()),
            }
        }
    }

    /// Handles one frame body. `Err` ends the connection: a protocol error, or the reply to
    /// closeSession.
    fn dispatch(&mut self, body: &[u8]) -> Result<(), LossReason> {
        let mut r = Reader::new(body);
        let header = ReplyHeader::decode(&mut r).map_err(|e| LossReason::Protocol(format!("reply header: {e}")))?;
        let raw = r.remaining();
        self.seq += 1;
        if header.xid == WATCH_XID {
            let event =
                Event::decode(self.seq, header, raw).map_err(|e| LossReason::Protocol(format!("watch event: {e}")))?;
            // The caller may have dropped the receiver; events then go nowhere.
            let _ = self.events.send(event);
            return Ok(());
        }
        let Some(entry) = lock(self.pending).take(header.xid).map_err(|e| LossReason::Protocol(e.to_string()))? else {
            tracing::warn!(xid = header.xid, err = header.err, "ignoring an unsolicited ping or auth reply");
            return Ok(());
        };
        let closing = entry.op == OpCode::CloseSession;
        if closing {
            // Closed before close() returns, so its caller already sees is_closed().
            self.shared.set(LossReason::Closed);
        }
        let reply = match entry.wanted {
            Wanted::Decoded => Reply::decode(self.seq, header, entry.op, raw),
            Wanted::HeaderOnly => Ok(Reply::header_only(self.seq, header)),
        };
        if let Some(w) = entry.waiter {
            let _ = w.send(reply);
        } else if let Ok(Reply { body: Err(e), .. }) = reply {
            tracing::warn!(error = %e, "ping failed");
        }
        if closing {
            return Err(LossReason::Closed);
        }
        Ok(())
    }
}
