//! The client's errors: server result codes (known or not), connection loss with its cause, and
//! handshake failures.
//!
//! Everything here is `Clone + PartialEq` so tests can `assert_eq!` on an error, and so one
//! connection loss can be handed to every request that was waiting on that connection.

use std::fmt;

use thiserror::Error;

use crate::error::{DecodeError, ZkError};

/// A non-zero result code from a server, kept even when this codec does not know it.
///
/// Conformance runs need to show exactly what a server said, so an unknown code is carried as
/// its raw integer instead of being folded into some catch-all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZkErrorOrCode {
    /// A code listed in [`ZkError`].
    Known(ZkError),
    /// Any other non-zero code.
    Unknown(i32),
}

impl ZkErrorOrCode {
    /// Classifies a wire code; `0` (OK) is `None`.
    pub fn from_code(code: i32) -> Option<ZkErrorOrCode> {
        if code == 0 {
            return None;
        }
        Some(ZkError::from_code(code).map_or(ZkErrorOrCode::Unknown(code), ZkErrorOrCode::Known))
    }

    /// The integer that was on the wire.
    pub fn code(self) -> i32 {
        match self {
            ZkErrorOrCode::Known(e) => e.code(),
            ZkErrorOrCode::Unknown(c) => c,
        }
    }

    /// The known error, if it is one.
    pub fn known(self) -> Option<ZkError> {
        match self {
            ZkErrorOrCode::Known(e) => Some(e),
            ZkErrorOrCode::Unknown(_) => None,
        }
    }
}

impl fmt::Display for ZkErrorOrCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZkErrorOrCode::Known(e) => write!(f, "{} ({})", e.name(), e.code()),
            ZkErrorOrCode::Unknown(c) => write!(f, "unknown error code {c}"),
        }
    }
}

impl From<ZkErrorOrCode> for ClientError {
    fn from(e: ZkErrorOrCode) -> ClientError {
        match e {
            ZkErrorOrCode::Known(e) => ClientError::Zk(e),
            ZkErrorOrCode::Unknown(c) => ClientError::UnknownCode(c),
        }
    }
}

/// Why a connection ended. Every request pending on it, and every later one, fails with it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LossReason {
    /// The server closed the socket.
    #[error("server closed the connection")]
    Eof,
    /// The socket failed.
    #[error("socket error: {0}")]
    Io(String),
    /// The server broke the protocol: an out-of-order or unknown xid, an undecodable header or
    /// event, a negative frame length. The stream cannot be trusted past that point.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A reply frame announced more bytes than `ConnectOptions::max_frame`.
    #[error("reply frame of {len} bytes exceeds max_frame of {max} bytes")]
    FrameTooLarge { len: usize, max: usize },
    /// `close()` got its reply and the client ended the connection.
    #[error("session closed by the client")]
    Closed,
    /// The `Client` was dropped (nobody can observe this one; it exists for logs).
    #[error("client dropped")]
    Dropped,
}

/// An error from the client.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClientError {
    /// The server answered with a known error code.
    #[error("server error: {} ({})", .0.name(), .0.code())]
    Zk(ZkError),
    /// The server answered with a code this codec does not know.
    #[error("server error: unknown code {0}")]
    UnknownCode(i32),
    /// The handshake reply said the session is expired (timeout 0 or session id 0).
    #[error("session expired")]
    SessionExpired,
    /// The connection is gone; see the reason.
    #[error("connection loss: {0}")]
    ConnectionLoss(LossReason),
    /// Connecting or the handshake failed (refused, reset, or a reply that is not a handshake).
    #[error("connect failed: {0}")]
    Connect(String),
    /// Connecting and the handshake did not finish within `connect_timeout`.
    #[error("connect timed out")]
    ConnectTimeout,
    /// A successful reply whose body does not decode as the request's reply. The frame itself
    /// was intact, so only this request fails and the connection stays up.
    #[error("undecodable reply to {op}: {error}")]
    BadReply { op: &'static str, error: DecodeError },
    /// A reply decoded, but to a body of another shape than the typed method expects.
    #[error("unexpected reply to {op}: {body}")]
    UnexpectedBody { op: &'static str, body: String },
}

impl ClientError {
    /// The server's error code, if this error is one.
    pub fn code(&self) -> Option<i32> {
        match self {
            ClientError::Zk(e) => Some(e.code()),
            ClientError::UnknownCode(c) => Some(*c),
            _ => None,
        }
    }

    /// Whether this is a connection loss (of any cause).
    pub fn is_connection_loss(&self) -> bool {
        matches!(self, ClientError::ConnectionLoss(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_without_panicking() {
        assert_eq!(ZkErrorOrCode::from_code(0), None);
        assert_eq!(ZkErrorOrCode::from_code(-101), Some(ZkErrorOrCode::Known(ZkError::NoNode)));
        assert_eq!(ZkErrorOrCode::from_code(-999), Some(ZkErrorOrCode::Unknown(-999)));
        assert_eq!(ZkErrorOrCode::from_code(i32::MIN).map(ZkErrorOrCode::code), Some(i32::MIN));
        assert_eq!(ClientError::from(ZkErrorOrCode::Known(ZkError::NoNode)), ClientError::Zk(ZkError::NoNode));
        assert_eq!(ClientError::from(ZkErrorOrCode::Unknown(7)), ClientError::UnknownCode(7));
        assert_eq!(ClientError::UnknownCode(7).code(), Some(7));
        assert_eq!(ZkErrorOrCode::Known(ZkError::NoNode).to_string(), "NONODE (-101)");
        assert!(ClientError::ConnectionLoss(LossReason::Eof).is_connection_loss());
    }
}
