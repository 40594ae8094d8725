//! What the client asks for in the handshake, and how it runs the connection afterwards.

use std::time::Duration;

use crate::frame::DEFAULT_MAX_FRAME;
use crate::records::connect::{ConnectRequest, PASSWORD_LEN};

/// Headroom over the server's request limit that the client accepts in a reply: a getData of a
/// node holding `DEFAULT_MAX_FRAME` bytes comes back with a reply header and a `Stat` on top.
pub const REPLY_HEADROOM: usize = 4096;

/// The default largest reply frame the client accepts.
pub const DEFAULT_MAX_REPLY_FRAME: usize = DEFAULT_MAX_FRAME + REPLY_HEADROOM;

/// Options of [`Client::connect`](super::Client::connect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Requested session timeout; the server negotiates it into its own bounds.
    pub timeout_ms: i32,
    /// 0 asks for a new session; anything else resumes that session.
    pub session_id: i64,
    /// The session password (16 zero bytes for a new session).
    pub passwd: Vec<u8>,
    /// `Some(_)` sends the 45-byte handshake with the readOnly flag, `None` the 44-byte form
    /// that old clients and ClickHouse send.
    pub read_only: Option<bool>,
    /// The last zxid this client saw; a server that is behind it refuses the session.
    pub last_zxid_seen: i64,
    /// The protocol version field of the handshake (always 0 on real clients).
    pub protocol_version: i32,
    /// Bound on TCP connect plus the handshake.
    pub connect_timeout: Duration,
    /// Ping every negotiated timeout / 3 while idle. Tests of session expiry turn this off.
    pub auto_ping: bool,
    /// Largest reply frame accepted; a longer one ends the connection.
    pub max_frame: usize,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            timeout_ms: 30_000,
            session_id: 0,
            passwd: vec![0; PASSWORD_LEN],
            read_only: Some(false),
            last_zxid_seen: 0,
            protocol_version: 0,
            connect_timeout: Duration::from_secs(10),
            auto_ping: true,
            max_frame: DEFAULT_MAX_REPLY_FRAME,
        }
    }
}

impl ConnectOptions {
    /// Options that resume an existing session with its password.
    pub fn resume(session_id: i64, passwd: Vec<u8>) -> Self {
        ConnectOptions { session_id, passwd, ..Default::default() }
    }

    /// The handshake request these options send.
    pub fn connect_request(&self) -> ConnectRequest {
        ConnectRequest {
            protocol_version: self.protocol_version,
            last_zxid_seen: self.last_zxid_seen,
            timeout_ms: self.timeout_ms,
            session_id: self.session_id,
            passwd: self.passwd.clone(),
            read_only: self.read_only,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::Encode;

    #[test]
    fn default_handshake_is_45_bytes_and_none_is_44() {
        let opts = ConnectOptions::default();
        assert_eq!(opts.connect_request().to_bytes().len(), 45);
        let opts = ConnectOptions { read_only: None, ..opts };
        assert_eq!(opts.connect_request().to_bytes().len(), 44);
        assert_eq!(ConnectOptions::resume(7, vec![1; 16]).connect_request().session_id, 7);
    }
}
