//! One client session of a run: a connection made with our own async client
//! (`testkeeper_wire::client`) to one server of the target, every request bounded by the
//! run's op timeout, every reply's zxid kept for the session checker, and each failure sorted
//! into "definitely did not happen" or "nobody knows".

use std::net::SocketAddr;
use std::time::Duration;

use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::request::Request;
use testkeeper_wire::response::Response;
use testkeeper_wire::ZkError;

use crate::history::Outcome;

/// Why a request did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The server answered with this error code.
    Server(i32),
    /// No answer: the connection was lost, or the op timed out.
    Lost(String),
}

impl CallError {
    /// The error's name for the history (`BADVERSION`, `connection loss: ...`).
    pub fn describe(&self) -> String {
        match self {
            CallError::Server(c) => {
                ZkError::from_code(*c).map_or_else(|| format!("code {c}"), |e| e.name().to_string())
            }
            CallError::Lost(why) => why.clone(),
        }
    }

    /// How an op that failed with this error ended: a read changes nothing whatever happened
    /// (fail); a write fails for sure only on an answer that says it was refused, anything
    /// else (a lost reply, CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED) may have applied.
    pub fn outcome(&self, write: bool) -> Outcome {
        let definite = matches!(self, CallError::Server(c) if DEFINITE.contains(c));
        if definite || !write {
            Outcome::Fail
        } else {
            Outcome::Unknown
        }
    }

    /// Whether the session is unusable after it (the op's outcome stays open, so the process
    /// that issued it must not issue another: Jepsen's crashed process).
    pub fn ends_session(&self) -> bool {
        !matches!(self, CallError::Server(c) if DEFINITE.contains(c))
    }
}

/// Codes that say a write was refused and changed nothing.
const DEFINITE: [i32; 6] = [
    -101, // NONODE
    -110, // NODEEXISTS
    -103, // BADVERSION
    -111, // NOTEMPTY
    -108, // NOCHILDRENFOREPHEMERALS
    -8,   // BADARGUMENTS
];

/// A connected session.
pub struct Conn {
    client: Client,
    /// Index of the server in the target's list.
    pub node: usize,
    timeout: Duration,
}

impl Conn {
    /// Connects to `addr` (server `node` of the target) with a new session.
    ///
    /// # Errors
    /// The connection or handshake failed or timed out.
    pub async fn connect(
        addr: SocketAddr,
        node: usize,
        timeout: Duration,
        session_ms: i32,
    ) -> Result<Conn, testkeeper_wire::client::ClientError> {
        let opts = ConnectOptions { timeout_ms: session_ms, connect_timeout: timeout, ..Default::default() };
        let client = Client::connect(addr, opts).await?;
        Ok(Conn { client, node, timeout })
    }

    /// The session id.
    pub fn session(&self) -> i64 {
        self.client.session_id()
    }

    /// Sends `req`; the reply's zxid goes to `zxids`.
    ///
    /// # Errors
    /// The server's error code, or a loss (connection gone, no reply within the timeout).
    pub async fn call(&self, req: Request, zxids: &mut Vec<i64>) -> Result<Response, CallError> {
        let reply = match tokio::time::timeout(self.timeout, self.client.call(req)).await {
            Err(_) => return Err(CallError::Lost(format!("no reply within {} ms", self.timeout.as_millis()))),
            Ok(Err(e)) => return Err(lost(e)),
            Ok(Ok(r)) => r,
        };
        if reply.header.zxid > 0 {
            zxids.push(reply.header.zxid);
        }
        reply.body.map_err(|e| CallError::Server(e.code()))
    }
}

fn lost(e: ClientError) -> CallError {
    match e.code() {
        Some(c) => CallError::Server(c),
        None => CallError::Lost(e.to_string()),
    }
}
