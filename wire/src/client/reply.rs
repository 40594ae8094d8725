//! What the connection hands back: a [`Reply`] to a request and an [`Event`] for a watch
//! notification, both stamped with their arrival order.

use super::error::{ClientError, ZkErrorOrCode};
use crate::error::DecodeError;
use crate::jute::{Decode, Reader};
use crate::opcode::OpCode;
use crate::records::header::{ReplyHeader, WatcherEvent};
use crate::response::Response;

/// A server's reply to one request, exactly as it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Position among every frame this connection received after the handshake, events
    /// included, counting from 1: compare with [`Event::seq`] to tell which arrived first.
    pub seq: u64,
    /// The header: xid, the server's zxid, and the error code.
    pub header: ReplyHeader,
    /// The decoded body when `header.err` is 0, else the error code (known or not).
    pub body: Result<Response, ZkErrorOrCode>,
    /// The bytes after the header as received, so a report can show a body the server sent
    /// even alongside a non-zero error.
    pub raw_body: Vec<u8>,
}

impl Reply {
    /// The body, with a server error turned into a [`ClientError`].
    ///
    /// # Errors
    /// `Zk` or `UnknownCode` when the header carries a non-zero error.
    pub fn into_response(self) -> Result<Response, ClientError> {
        self.body.map_err(ClientError::from)
    }

    /// A reply whose body nobody reads: an error code in `body` as `decode` puts it, else
    /// `Response::Empty`, and no bytes kept.
    pub(crate) fn header_only(seq: u64, header: ReplyHeader) -> Reply {
        let body = ZkErrorOrCode::from_code(header.err).map_or(Ok(Response::Empty), Err);
        Reply { seq, header, body, raw_body: Vec::new() }
    }

    /// Decodes the body of a reply to `op`; the header was already read.
    ///
    /// # Errors
    /// `BadReply` when `err` is 0 and the body does not decode as a reply to `op`.
    pub(crate) fn decode(seq: u64, header: ReplyHeader, op: OpCode, raw: &[u8]) -> Result<Reply, ClientError> {
        let body = match ZkErrorOrCode::from_code(header.err) {
            Some(e) => Err(e),
            None => Ok(Response::decode(op, raw).map_err(|error| ClientError::BadReply { op: op.name(), error })?),
        };
        Ok(Reply { seq, header, body, raw_body: raw.to_vec() })
    }
}

/// What a caller wants of a reply's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// Decoded into a [`Response`], and its bytes kept.
    Decoded,
    /// Neither: the caller reads the header alone (`Client::call_header`, and the client's own
    /// pings), so the body is skipped where it lies.
    HeaderOnly,
}

/// A watch notification (xid -1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Arrival position, on the same counter as [`Reply::seq`].
    pub seq: u64,
    /// The header the event came with (xid -1; the zxid is whatever the server put there).
    pub header: ReplyHeader,
    /// Type, state and path.
    pub event: WatcherEvent,
}

impl Event {
    /// Decodes the body of a frame whose header has xid -1.
    ///
    /// # Errors
    /// Any record error: the event is truncated or malformed.
    pub(crate) fn decode(seq: u64, header: ReplyHeader, raw: &[u8]) -> Result<Event, DecodeError> {
        let event = WatcherEvent::decode(&mut Reader::new(raw))?;
        Ok(Event { seq, header, event })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ZkError;
    use bytes::BytesMut;

    #[test]
    fn errors_keep_their_code_and_bodies_decode_by_op() {
        let h = |err| ReplyHeader { xid: 1, zxid: 9, err };
        let r = Reply::decode(1, h(-101), OpCode::GetData, &[]).unwrap();
        assert_eq!(r.body, Err(ZkErrorOrCode::Known(ZkError::NoNode)));
        assert_eq!(r.into_response(), Err(ClientError::Zk(ZkError::NoNode)));
        let r = Reply::decode(2, h(-4242), OpCode::GetData, &[1, 2]).unwrap();
        assert_eq!(r.body, Err(ZkErrorOrCode::Unknown(-4242)));
        assert_eq!(r.raw_body, vec![1, 2]);
        let mut body = BytesMut::new();
        Response::Create("/a".into()).encode(&mut body);
        assert_eq!(Reply::decode(3, h(0), OpCode::Create, &body).unwrap().body, Ok(Response::Create("/a".into())));
        let bad = Reply::decode(4, h(0), OpCode::Create, &[0, 0]).unwrap_err();
        assert!(matches!(bad, ClientError::BadReply { op: "create", .. }), "{bad:?}");
    }
}
