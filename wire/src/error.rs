//! Error codes of the ZooKeeper protocol (`KeeperException.Code`) and the codec's own errors.
//!
//! `ZkError` maps one-to-one to the integer on the wire so tests can compare with `assert_eq!`.
//! `DecodeError` is a wire error: it closes the one connection that sent the bad bytes.

use thiserror::Error;

/// A ZooKeeper result code, exactly as carried in `ReplyHeader.err` and multi headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Error)]
#[repr(i32)]
pub enum ZkError {
    #[error("system error")]
    SystemError = -1,
    #[error("runtime inconsistency")]
    RuntimeInconsistency = -2,
    #[error("data inconsistency")]
    DataInconsistency = -3,
    #[error("connection loss")]
    ConnectionLoss = -4,
    #[error("marshalling error")]
    MarshallingError = -5,
    #[error("unimplemented")]
    Unimplemented = -6,
    #[error("operation timeout")]
    OperationTimeout = -7,
    #[error("bad arguments")]
    BadArguments = -8,
    #[error("unknown session")]
    UnknownSession = -12,
    #[error("new config no quorum")]
    NewConfigNoQuorum = -13,
    #[error("reconfig in progress")]
    ReconfigInProgress = -14,
    #[error("api error")]
    ApiError = -100,
    #[error("no node")]
    NoNode = -101,
    #[error("not authenticated")]
    NoAuth = -102,
    #[error("bad version")]
    BadVersion = -103,
    #[error("no children for ephemerals")]
    NoChildrenForEphemerals = -108,
    #[error("node exists")]
    NodeExists = -110,
    #[error("directory not empty")]
    NotEmpty = -111,
    #[error("session expired")]
    SessionExpired = -112,
    #[error("invalid callback")]
    InvalidCallback = -113,
    #[error("invalid ACL")]
    InvalidAcl = -114,
    #[error("authentication failed")]
    AuthFailed = -115,
    #[error("session moved")]
    SessionMoved = -118,
    #[error("not a read-only call")]
    NotReadOnly = -119,
    #[error("ephemeral on local session")]
    EphemeralOnLocalSession = -120,
    #[error("no watcher")]
    NoWatcher = -121,
    #[error("request timeout")]
    RequestTimeout = -122,
    #[error("reconfig disabled")]
    ReconfigDisabled = -123,
    #[error("session closed requires SASL auth")]
    SessionClosedRequireSaslAuth = -124,
    #[error("quota exceeded")]
    QuotaExceeded = -125,
    #[error("throttled op")]
    ThrottledOp = -127,
}

impl ZkError {
    /// Every code, for round-trip tests and lookups.
    pub const ALL: [ZkError; 31] = [
        Self::SystemError,
        Self::RuntimeInconsistency,
        Self::DataInconsistency,
        Self::ConnectionLoss,
        Self::MarshallingError,
        Self::Unimplemented,
        Self::OperationTimeout,
        Self::BadArguments,
        Self::UnknownSession,
        Self::NewConfigNoQuorum,
        Self::ReconfigInProgress,
        Self::ApiError,
        Self::NoNode,
        Self::NoAuth,
        Self::BadVersion,
        Self::NoChildrenForEphemerals,
        Self::NodeExists,
        Self::NotEmpty,
        Self::SessionExpired,
        Self::InvalidCallback,
        Self::InvalidAcl,
        Self::AuthFailed,
        Self::SessionMoved,
        Self::NotReadOnly,
        Self::EphemeralOnLocalSession,
        Self::NoWatcher,
        Self::RequestTimeout,
        Self::ReconfigDisabled,
        Self::SessionClosedRequireSaslAuth,
        Self::QuotaExceeded,
        Self::ThrottledOp,
    ];

    /// The integer carried on the wire.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The upper-case name ZooKeeper uses (`NONODE`, `BADVERSION`, ...), for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::SystemError => "SYSTEMERROR",
            Self::RuntimeInconsistency => "RUNTIMEINCONSISTENCY",
            Self::DataInconsistency => "DATAINCONSISTENCY",
            Self::ConnectionLoss => "CONNECTIONLOSS",
            Self::MarshallingError => "MARSHALLINGERROR",
            Self::Unimplemented => "UNIMPLEMENTED",
            Self::OperationTimeout => "OPERATIONTIMEOUT",
            Self::BadArguments => "BADARGUMENTS",
            Self::UnknownSession => "UNKNOWNSESSION",
            Self::NewConfigNoQuorum => "NEWCONFIGNOQUORUM",
            Self::ReconfigInProgress => "RECONFIGINPROGRESS",
            Self::ApiError => "APIERROR",
            Self::NoNode => "NONODE",
            Self::NoAuth => "NOAUTH",
            Self::BadVersion => "BADVERSION",
            Self::NoChildrenForEphemerals => "NOCHILDRENFOREPHEMERALS",
            Self::NodeExists => "NODEEXISTS",
            Self::NotEmpty => "NOTEMPTY",
            Self::SessionExpired => "SESSIONEXPIRED",
            Self::InvalidCallback => "INVALIDCALLBACK",
            Self::InvalidAcl => "INVALIDACL",
            Self::AuthFailed => "AUTHFAILED",
            Self::SessionMoved => "SESSIONMOVED",
            Self::NotReadOnly => "NOTREADONLY",
            Self::EphemeralOnLocalSession => "EPHEMERALONLOCALSESSION",
            Self::NoWatcher => "NOWATCHER",
            Self::RequestTimeout => "REQUESTTIMEOUT",
            Self::ReconfigDisabled => "RECONFIGDISABLED",
            Self::SessionClosedRequireSaslAuth => "SESSIONCLOSEDREQUIRESASLAUTH",
            Self::QuotaExceeded => "QUOTAEXCEEDED",
            Self::ThrottledOp => "THROTTLEDOP",
        }
    }

    /// Converts a wire code; `0` (OK) and unknown codes are `None`.
    pub fn from_code(code: i32) -> Option<ZkError> {
        Self::ALL.iter().copied().find(|e| e.code() == code)
    }
}

/// Why a byte sequence could not be decoded. Always fatal for the connection that sent it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The frame ended before the record did: a short body inside a complete frame.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A length prefix is negative (other than the jute null marker) or larger than the frame.
    #[error("invalid length {len} in {what}")]
    BadLength { what: &'static str, len: i64 },
    /// The opcode is not one this codec knows.
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    /// A structurally impossible value (e.g. a multi header with a bad terminator).
    #[error("malformed {0}")]
    Malformed(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        for e in ZkError::ALL {
            assert_eq!(ZkError::from_code(e.code()), Some(e));
        }
        let mut codes: Vec<i32> = ZkError::ALL.iter().map(|e| e.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), ZkError::ALL.len());
        assert_eq!(ZkError::from_code(0), None);
        assert_eq!(ZkError::NoNode.code(), -101);
        assert_eq!(ZkError::NodeExists.name(), "NODEEXISTS");
    }
}
