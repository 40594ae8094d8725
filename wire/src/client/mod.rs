//! A small pipelined async client for ZooKeeper and ClickHouse Keeper, for tests and
//! conformance runs rather than applications: it never reconnects, and it shows exactly what
//! the server said (xid, zxid, error code, body bytes, the handshake's length).
//!
//! One task per connection writes requests as they come and reads replies as they arrive;
//! requests get xids 1, 2, 3... in the order they are written, and replies are matched back in
//! FIFO order, an out-of-order xid being a protocol error that ends the connection. Watch
//! events come out on a channel, stamped with the same arrival counter as replies.
//!
//! # Layout
//! - this file: [`Client`]: connect, the low-level [`Client::call`], events, state.
//! - `options`: [`ConnectOptions`].
//! - `conn`: the handshake and the I/O task.
//! - `pending`: xid matching, with no I/O.
//! - `reply`: [`Reply`] and [`Event`].
//! - `ops`, `ext_ops`: typed conveniences over `call`.
//! - `error`: [`ClientError`], [`LossReason`], [`ZkErrorOrCode`].

mod conn;
mod error;
mod ext_ops;
mod ops;
mod options;
mod pending;
mod reply;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use error::{ClientError, LossReason, ZkErrorOrCode};
pub use options::{ConnectOptions, DEFAULT_MAX_REPLY_FRAME, REPLY_HEADROOM};
use reply::Wanted;
pub use reply::{Event, Reply};

use crate::opcode::{AUTH_XID, PING_XID, SET_WATCHES_XID};
use crate::records::connect::ConnectResponse;
use crate::records::header::ReplyHeader;
use crate::request::Request;
use conn::{Command, RunConfig, Shared};

/// One connection to one server, with one session.
///
/// Dropping it closes the socket without closing the session (the server expires it after the
/// timeout); [`Client::close`] closes the session first.
#[derive(Debug)]
pub struct Client {
    cmds: UnboundedSender<Command>,
    shared: Arc<Shared>,
    events: Option<UnboundedReceiver<Event>>,
    handshake: ConnectResponse,
    handshake_len: usize,
    task: JoinHandle<()>,
}

impl Client {
    /// Connects, sends the handshake `opts` describe, and starts the connection's task.
    ///
    /// # Errors
    /// `Connect` or `ConnectTimeout` when the socket or handshake fails; `SessionExpired` when
    /// the server answers with timeout 0 or session id 0 (it does so for an expired session).
    pub async fn connect(addr: SocketAddr, opts: ConnectOptions) -> Result<Client, ClientError> {
        let hs = conn::handshake(addr, &opts).await?;
        let response = hs.response.clone();
        if response.timeout_ms <= 0 || response.session_id == 0 {
            return Err(ClientError::SessionExpired);
        }
        let ping_every = opts.auto_ping.then(|| Duration::from_millis((response.timeout_ms as u64 / 3).max(1)));
        let handshake_len = hs.len;
        let shared = Arc::new(Shared::default());
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (event_tx, event_rx) = mpsc::unbounded_channel();
        let cfg = RunConfig { ping_every, max_frame: opts.max_frame };
        let task = tokio::spawn(conn::run(hs, cfg, shared.clone(), cmd_rx, event_tx));
        Ok(Client { cmds: cmd_tx, shared, events: Some(event_rx), handshake: response, handshake_len, task })
    }

    /// The server's handshake reply, as decoded.
    pub fn connect_response(&self) -> &ConnectResponse {
        &self.handshake
    }

    /// Body length of the handshake reply: 37 with the readOnly flag, 36 without.
    pub fn handshake_len(&self) -> usize {
        self.handshake_len
    }

    /// The session id the server assigned (or resumed).
    pub fn session_id(&self) -> i64 {
        self.handshake.session_id
    }

    /// The session password, for resuming the session on another connection.
    pub fn session_passwd(&self) -> &[u8] {
        &self.handshake.passwd
    }

    /// The session timeout the server negotiated.
    pub fn negotiated_timeout_ms(&self) -> i32 {
        self.handshake.timeout_ms
    }

    /// Takes the watch event channel; `None` after the first call. Events arrive in order and
    /// the channel ends when the connection does. Until taken, events are buffered.
    pub fn events(&mut self) -> Option<UnboundedReceiver<Event>> {
        self.events.take()
    }

    /// Whether the connection has ended (every request now fails with `ConnectionLoss`).
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed() || self.cmds.is_closed()
    }

    /// Why the connection ended, once it has.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.shared.reason()
    }

    /// Sends one request and waits for its reply, whatever the server's error code.
    ///
    /// Pings go out with xid -2, auth packets with -4 and setWatches with -8, as the Java
    /// client sends them; everything else takes the next sequential xid.
    ///
    /// # Errors
    /// `ConnectionLoss` when the connection is gone or ends before the reply; `BadReply` when a
    /// successful reply's body does not decode. A server error is *not* an `Err` here: it is
    /// in [`Reply::body`].
    pub async fn call(&self, req: Request) -> Result<Reply, ClientError> {
        let xid = reserved_xid(&req);
        self.send(xid, req, Wanted::Decoded).await
    }

    /// Like [`call`](Self::call), but only the reply's header comes back (xid, zxid, error
    /// code): the body is neither decoded nor kept, so a body that would not decode goes
    /// unnoticed. For load generators (`testkeeper bench`), whose CPU on a shared machine is
    /// taken from the server they measure, and more so the more a reply carries.
    ///
    /// # Errors
    /// `ConnectionLoss` when the connection is gone or ends before the reply.
    pub async fn call_header(&self, req: Request) -> Result<ReplyHeader, ClientError> {
        let xid = reserved_xid(&req);
        Ok(self.send(xid, req, Wanted::HeaderOnly).await?.header)
    }

    /// Like [`call`](Self::call) but with an xid of the caller's choosing, to see how a server
    /// treats odd ones. -2 and -4 are matched as pings and auth replies; -1 must not be used
    /// (its reply would read as a watch event); any other xid must come back in FIFO order.
    ///
    /// # Errors
    /// As [`call`](Self::call).
    pub async fn call_with_xid(&self, xid: i32, req: Request) -> Result<Reply, ClientError> {
        self.send(Some(xid), req, Wanted::Decoded).await
    }

    async fn send(&self, xid: Option<i32>, req: Request, wanted: Wanted) -> Result<Reply, ClientError> {
        if self.shared.is_closed() {
            return Err(self.shared.loss());
        }
        let (waiter, rx) = oneshot::channel();
        if self.cmds.send(Command { xid, req, wanted, waiter }).is_err() {
            return Err(self.shared.loss());
        }
        // A dropped waiter means the task ended without answering: that is a loss too.
        rx.await.unwrap_or_else(|_| Err(self.shared.loss()))
    }
}

/// The xid `req` goes out with when it is not the next sequential one: pings -2, auth packets
/// -4 and setWatches -8, as the Java client sends them.
fn reserved_xid(req: &Request) -> Option<i32> {
    match req {
        Request::Ping => Some(PING_XID),
        Request::Auth(_) => Some(AUTH_XID),
        Request::SetWatches(_) | Request::SetWatches2(_) => Some(SET_WATCHES_XID),
        _ => None,
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Aborting rather than only dropping the sender also stops a writer stuck on a full
        // socket; the socket closes with the task.
        self.task.abort();
    }
}
