//! One interpreter of ClickHouse's `clickhouse keeper-client` language, shared by the
//! `testkeeper client` shell and Keeper's `/api/v1/commands?command=...` route: parse a line
//! (`parse.rs`), run each statement against any ZooKeeper or Keeper over the wire client
//! (`exec.rs`), and print what keeper-client prints (`text.rs`), so scripts written against
//! keeper-client read the same output here.

pub mod exec;
pub mod parse;
pub mod path;
pub mod text;

use std::net::SocketAddr;
use std::time::Duration;

use testkeeper_wire::client::{Client, ClientError, ConnectOptions};

/// What one line printed: its standard output and, when a statement failed, the error that
/// stopped it (keeper-client stops a line at its first failing statement).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    pub out: String,
    pub err: Option<LineError>,
}

/// Why a line stopped: it did not parse, or a statement failed. Prints as keeper-client does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    Syntax(parse::SyntaxError),
    Statement(exec::StatementError),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Syntax(e) => e.fmt(f),
            LineError::Statement(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LineError {}

/// A connected session and its working path.
pub struct Session {
    client: Client,
    /// The server, for four-letter words (each on a connection of its own, as keeper-client).
    addr: SocketAddr,
    /// The working path `cd` changes; relative paths resolve against it.
    pub cwd: String,
    /// The bound on one four-letter word's answer.
    op_timeout: Duration,
}

/// keeper-client's defaults: 10 s for the connection, the session and each operation.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Session {
    /// Opens a session on `addr`.
    ///
    /// # Errors
    /// The connection or the handshake fails.
    pub async fn connect(
        addr: SocketAddr,
        connect_timeout: Duration,
        session_timeout: Duration,
        op_timeout: Duration,
    ) -> Result<Session, ClientError> {
        let opts = ConnectOptions {
            timeout_ms: i32::try_from(session_timeout.as_millis()).unwrap_or(i32::MAX),
            connect_timeout,
            ..ConnectOptions::default()
        };
        let client = Client::connect(addr, opts).await?;
        Ok(Session { client, addr, cwd: "/".into(), op_timeout })
    }

    /// The wire client, for completion and tests.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs every statement of `line` in order, stopping at the first that fails.
    pub async fn run(&mut self, line: &str) -> Output {
        let mut o = Output::default();
        match parse::parse(line) {
            Err(e) => o.err = Some(LineError::Syntax(e)),
            Ok(cmds) => {
                for cmd in cmds {
                    if let Err(e) = exec::execute(self, &cmd, &mut o.out).await {
                        o.err = Some(LineError::Statement(e));
                        break;
                    }
                }
            }
        }
        o
    }

    /// Ends the session (best effort: a server that holds the close is not waited for long).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client.close()).await;
    }
}
