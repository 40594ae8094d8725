//! The handshake: `ConnectRequest` (44 bytes, or 45 with the readOnly flag) and
//! `ConnectResponse` (36 bytes, or 37 with the readOnly flag).

use bytes::BytesMut;

use crate::error::DecodeError;
use crate::jute::{put_bool, put_bytes, put_i32, put_i64, Decode, Encode, Reader};

/// Length of the session password every real server uses.
pub const PASSWORD_LEN: usize = 16;

/// The first frame a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    pub protocol_version: i32,
    pub last_zxid_seen: i64,
    pub timeout_ms: i32,
    /// 0 for a new session, else the session to resume.
    pub session_id: i64,
    pub passwd: Vec<u8>,
    /// `None` when the client sent the 44-byte form without the flag (old clients, ClickHouse).
    pub read_only: Option<bool>,
}

impl Encode for ConnectRequest {
    fn encode(&self, out: &mut BytesMut) {
        put_i32(out, self.protocol_version);
        put_i64(out, self.last_zxid_seen);
        put_i32(out, self.timeout_ms);
        put_i64(out, self.session_id);
        put_bytes(out, &self.passwd);
        if let Some(ro) = self.read_only {
            put_bool(out, ro);
        }
    }
}

impl Decode for ConnectRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.i32("ConnectRequest.protocolVersion")?,
            last_zxid_seen: r.i64("ConnectRequest.lastZxidSeen")?,
            timeout_ms: r.i32("ConnectRequest.timeOut")?,
            session_id: r.i64("ConnectRequest.sessionId")?,
            passwd: r.buffer("ConnectRequest.passwd")?,
            read_only: if r.is_empty() { None } else { Some(r.bool("ConnectRequest.readOnly")?) },
        })
    }
}

/// The server's answer to the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    /// Negotiated timeout; 0 tells the client its session is expired.
    pub timeout_ms: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    /// `None` for the 36-byte form that ClickHouse Keeper always sends.
    pub read_only: Option<bool>,
}

impl Encode for ConnectResponse {
    fn encode(&self, out: &mut BytesMut) {
        put_i32(out, self.protocol_version);
        put_i32(out, self.timeout_ms);
        put_i64(out, self.session_id);
        put_bytes(out, &self.passwd);
        if let Some(ro) = self.read_only {
            put_bool(out, ro);
        }
    }
}

impl Decode for ConnectResponse {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.i32("ConnectResponse.protocolVersion")?,
            timeout_ms: r.i32("ConnectResponse.timeOut")?,
            session_id: r.i64("ConnectResponse.sessionId")?,
            passwd: r.buffer("ConnectResponse.passwd")?,
            read_only: if r.is_empty() { None } else { Some(r.bool("ConnectResponse.readOnly")?) },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_lengths() {
        let mut req = ConnectRequest { timeout_ms: 30000, passwd: vec![0; 16], ..Default::default() };
        assert_eq!(req.to_bytes().len(), 44);
        assert_eq!(ConnectRequest::decode_exact(&req.to_bytes()).unwrap(), req);
        req.read_only = Some(false);
        assert_eq!(req.to_bytes().len(), 45);
        assert_eq!(ConnectRequest::decode_exact(&req.to_bytes()).unwrap(), req);
        let mut resp = ConnectResponse { timeout_ms: 10000, session_id: 1, passwd: vec![0; 16], ..Default::default() };
        assert_eq!(resp.to_bytes().len(), 36);
        assert_eq!(ConnectResponse::decode_exact(&resp.to_bytes()).unwrap(), resp);
        resp.read_only = Some(false);
        assert_eq!(resp.to_bytes().len(), 37);
        assert_eq!(ConnectResponse::decode_exact(&resp.to_bytes()).unwrap(), resp);
        // One byte short of the 44-byte form is a truncated password, not a missing flag.
        let b = ConnectRequest { read_only: None, ..req }.to_bytes();
        assert!(ConnectRequest::decode_exact(&b[..43]).is_err());
    }
}
