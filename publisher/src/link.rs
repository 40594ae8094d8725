//! The publisher's connection to Keeper, split by what a lost reply means.
//!
//! Reads are idempotent: on a connection loss they reconnect (a new session) and ask again.
//! Mutations go through [`Link::mutate`] and are sent exactly once: a loss or a timeout is an
//! [`Outcome::Unknown`], recorded in the journal, never repeated (unless the deliberately
//! broken mode asks for the bug, so the chaos sweep can show it catches it).
//!
//! Every request's (session, xid) is journaled so the sweep can match the server's fault log
//! to what the publisher believed; the client numbers xids 1, 2, 3... per connection.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::{Request, Response, Stat, ZkError};

/// A bound on any one reply; past it the outcome of a mutation is unknown.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Reconnect-and-reread attempts for one read.
const READ_ATTEMPTS: usize = 5;

/// How a mutation ended, as far as the publisher can know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server acknowledged it.
    Acked(Response),
    /// The server refused it (nothing applied).
    Rejected(ZkError),
    /// No reply: it may or may not have been applied.
    Unknown(String),
}

/// Why a read (or an idempotent setup create) got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// Every attempt lost its connection or timed out; the last loss.
    Lost(String),
    /// The server answered something other than what the call reads (`op path: answer`).
    Unexpected { op: &'static str, path: String, answer: String },
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Lost(why) => f.write_str(why),
            LinkError::Unexpected { op, path, answer } => write!(f, "{op} {path}: {answer}"),
        }
    }
}

impl std::error::Error for LinkError {}

/// The publisher's own steps report in text.
impl From<LinkError> for String {
    fn from(e: LinkError) -> String {
        e.to_string()
    }
}

/// One request the publisher sent, for the sweep's cross-check with the server's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sent {
    pub session: i64,
    pub xid: i32,
    /// `read` or the mutation's label (`authority:admitted`, `ddl:enqueue`...).
    pub what: String,
    pub path: String,
    /// `ok`, `rejected:<code>`, `unknown`, `read-lost`.
    pub outcome: String,
}

/// Deliberate bugs, for showing that the chaos sweep catches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakage {
    /// Re-send an authority mutation after an unknown outcome (a "generic retry").
    RetryAuthorityMutation,
}

/// Codes that, like a lost reply, leave a write's outcome unknown (ZooKeeper's "hardware"
/// errors, which ClickHouse's retry controller also singles out).
fn is_hardware(e: ZkError) -> bool {
    matches!(e, ZkError::ConnectionLoss | ZkError::OperationTimeout | ZkError::SessionExpired | ZkError::SessionMoved)
}

/// A reconnecting connection with a request journal.
pub struct Link {
    addr: SocketAddr,
    client: Option<Client>,
    session: i64,
    next_xid: i32,
    /// Every session this link opened, in order.
    pub sessions: Vec<i64>,
    pub journal: Vec<Sent>,
    pub breakage: Option<Breakage>,
}

impl Link {
    /// Connects (one session); more sessions come only after a loss.
    ///
    /// # Errors
    /// When the first connection fails.
    pub async fn connect(addr: SocketAddr) -> Result<Link, ClientError> {
        let mut link = Link {
            addr,
            client: None,
            session: 0,
            next_xid: 1,
            sessions: Vec::new(),
            journal: Vec::new(),
            breakage: None,
        };
        link.ensure().await?;
        Ok(link)
    }

    /// The current (or first) session id.
    pub fn session_id(&self) -> i64 {
        self.session
    }

    async fn ensure(&mut self) -> Result<(), ClientError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let c = Client::connect(self.addr, ConnectOptions::default()).await?;
            self.session = c.session_id();
            self.sessions.push(self.session);
            self.next_xid = 1;
            self.client = Some(c);
        }
        Ok(())
    }

    /// Sends once; a loss or timeout drops the connection so the next call starts afresh.
    async fn send(&mut self, what: &str, path: &str, req: Request) -> Result<Result<Response, ZkError>, String> {
        if let Err(e) = self.ensure().await {
            return Err(format!("reconnect failed: {e}"));
        }
        let (session, xid) = (self.session, self.next_xid);
        self.next_xid += 1;
        let client = self.client.as_ref().expect("ensured");
        let res = tokio::time::timeout(CALL_TIMEOUT, client.call(req)).await;
        let ret = match res {
            Ok(Ok(reply)) => match reply.into_response() {
                Ok(r) => Ok(Ok(r)),
                // These say nothing about whether a write happened: unknown, as a loss is.
                Err(ClientError::Zk(e)) if is_hardware(e) => Err(format!("server said {}", e.name())),
                Err(ClientError::Zk(e)) => Ok(Err(e)),
                Err(e) => Err(e.to_string()),
            },
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("timed out".into()),
        };
        let outcome = match &ret {
            Ok(Ok(_)) => "ok".to_string(),
            Ok(Err(e)) => format!("rejected:{}", e.code()),
            Err(_) if what == "read" => "read-lost".into(),
            Err(_) => "unknown".into(),
        };
        if ret.is_err() {
            self.client = None;
        }
        self.journal.push(Sent { session, xid, what: what.into(), path: path.into(), outcome });
        ret
    }

    /// A read, retried on a new session after a loss.
    ///
    /// # Errors
    /// The last loss, after `READ_ATTEMPTS`.
    pub async fn read(
        &mut self,
        path: &str,
        req: impl Fn() -> Request,
    ) -> Result<Result<Response, ZkError>, LinkError> {
        let mut last = String::new();
        for attempt in 0..READ_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(20 * attempt as u64)).await;
            }
            match self.send("read", path, req()).await {
                Ok(r) => return Ok(r),
                Err(e) => last = e,
            }
        }
        Err(LinkError::Lost(last))
    }

    /// getData; `Ok(None)` for NoNode.
    ///
    /// # Errors
    /// Connection losses past the retries, or another server error.
    pub async fn get(&mut self, path: &str) -> Result<Option<(Vec<u8>, Stat)>, LinkError> {
        let p = path.to_string();
        let req = || Request::GetData(testkeeper_wire::records::data::GetDataRequest { path: p.clone(), watch: false });
        match self.read(path, req).await? {
            Ok(Response::Data { data, stat }) => Ok(Some((data.unwrap_or_default(), stat))),
            Err(ZkError::NoNode) => Ok(None),
            other => Err(LinkError::Unexpected { op: "getData", path: path.into(), answer: format!("{other:?}") }),
        }
    }

    /// getChildren; `Ok(None)` for NoNode.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn children(&mut self, path: &str) -> Result<Option<Vec<String>>, LinkError> {
        let p = path.to_string();
        let req = || {
            Request::GetChildren(testkeeper_wire::records::children::GetChildrenRequest {
                path: p.clone(),
                watch: false,
            })
        };
        match self.read(path, req).await? {
            Ok(Response::Children(c)) => Ok(Some(c)),
            Err(ZkError::NoNode) => Ok(None),
            other => Err(LinkError::Unexpected { op: "getChildren", path: path.into(), answer: format!("{other:?}") }),
        }
    }

    /// An idempotent setup create: NodeExists counts as done, so it may be retried.
    ///
    /// # Errors
    /// Losses past the retries, or another server error.
    pub async fn ensure_node(&mut self, path: &str, data: &[u8]) -> Result<(), LinkError> {
        let req = || crate::create_request(path, data, 0);
        match self.read(path, req).await? {
            Ok(_) | Err(ZkError::NodeExists) => Ok(()),
            Err(e) => Err(LinkError::Unexpected { op: "create", path: path.into(), answer: format!("{e:?}") }),
        }
    }

    /// Sends a mutation exactly once and reports what is known of its outcome.
    pub async fn mutate(&mut self, what: &str, path: &str, req: Request) -> Outcome {
        let retry = (self.breakage == Some(Breakage::RetryAuthorityMutation) && what.starts_with("authority:"))
            .then(|| req.clone());
        let out = match self.send(what, path, req).await {
            Ok(Ok(r)) => Outcome::Acked(r),
            Ok(Err(e)) => Outcome::Rejected(e),
            Err(e) => Outcome::Unknown(e),
        };
        match (out, retry) {
            // The bug under test: a generic retry of a mutation whose outcome is unknown.
            (Outcome::Unknown(_), Some(again)) => match self.send(what, path, again).await {
                Ok(Ok(r)) => Outcome::Acked(r),
                Ok(Err(e)) => Outcome::Rejected(e),
                Err(e) => Outcome::Unknown(e),
            },
            (out, _) => out,
        }
    }
}
