//! The one `Request` enum: every client request body, decoded by opcode.
//!
//! Adding an operation means a record (in `records/`), a variant here, and one arm in each of
//! `decode_body`, `encode_body` and `op`.

use bytes::BytesMut;

use crate::error::DecodeError;
use crate::jute::{Decode, Encode, Reader};
use crate::opcode::OpCode;
use crate::records::acl::{GetAclRequest, SetAclRequest};
use crate::records::children::GetChildrenRequest;
use crate::records::create::{CreateRequest, CreateTtlRequest};
use crate::records::data::{
    CheckVersionRequest, DeleteRequest, ExistsRequest, GetDataRequest, PathRecord, SetDataRequest,
};
use crate::records::keeper_ext::{CheckStatRequest, ListRecursiveRequest, ListRequest, RemoveRecursiveRequest};
use crate::records::multi::MultiHeader;
use crate::records::session::AuthPacket;
use crate::records::watches::{AddWatchRequest, SetWatches, SetWatches2, WatchesRequest};

/// A create of any kind. `op` says which opcode carried it; `ttl` is set only for createTTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOp {
    pub op: OpCode,
    pub req: CreateRequest,
    pub ttl: i64,
}

/// A decoded client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// create, create2, createContainer, createTTL, createIfNotExists.
    Create(CreateOp),
    Delete(DeleteRequest),
    Exists(ExistsRequest),
    GetData(GetDataRequest),
    SetData(SetDataRequest),
    GetAcl(GetAclRequest),
    SetAcl(SetAclRequest),
    GetChildren(GetChildrenRequest),
    GetChildren2(GetChildrenRequest),
    Sync(PathRecord),
    Ping,
    Check(CheckVersionRequest),
    Multi(Vec<Request>),
    MultiRead(Vec<Request>),
    /// Reconfig is parsed only far enough to be refused.
    Reconfig,
    CheckWatches(WatchesRequest),
    RemoveWatches(WatchesRequest),
    Close,
    Auth(AuthPacket),
    SetWatches(SetWatches),
    SetWatches2(SetWatches2),
    GetEphemerals(PathRecord),
    GetAllChildrenNumber(PathRecord),
    AddWatch(AddWatchRequest),
    WhoAmI,
    FilteredList(ListRequest),
    CheckNotExists(CheckVersionRequest),
    RemoveRecursive(RemoveRecursiveRequest),
    CheckStat(CheckStatRequest),
    TryRemove(DeleteRequest),
    FilteredListWithStatsAndData(ListRequest),
    ListRecursive(ListRecursiveRequest),
}

impl Request {
    /// The opcode this request is sent with.
    pub fn op(&self) -> OpCode {
        match self {
            Request::Create(c) => c.op,
            Request::Delete(_) => OpCode::Delete,
            Request::Exists(_) => OpCode::Exists,
            Request::GetData(_) => OpCode::GetData,
            Request::SetData(_) => OpCode::SetData,
            Request::GetAcl(_) => OpCode::GetAcl,
            Request::SetAcl(_) => OpCode::SetAcl,
            Request::GetChildren(_) => OpCode::GetChildren,
            Request::GetChildren2(_) => OpCode::GetChildren2,
            Request::Sync(_) => OpCode::Sync,
            Request::Ping => OpCode::Ping,
            Request::Check(_) => OpCode::Check,
            Request::Multi(_) => OpCode::Multi,
            Request::MultiRead(_) => OpCode::MultiRead,
            Request::Reconfig => OpCode::Reconfig,
            Request::CheckWatches(_) => OpCode::CheckWatches,
            Request::RemoveWatches(_) => OpCode::RemoveWatches,
            Request::Close => OpCode::CloseSession,
            Request::Auth(_) => OpCode::Auth,
            Request::SetWatches(_) => OpCode::SetWatches,
            Request::SetWatches2(_) => OpCode::SetWatches2,
            Request::GetEphemerals(_) => OpCode::GetEphemerals,
            Request::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            Request::AddWatch(_) => OpCode::AddWatch,
            Request::WhoAmI => OpCode::WhoAmI,
            Request::FilteredList(_) => OpCode::FilteredList,
            Request::CheckNotExists(_) => OpCode::CheckNotExists,
            Request::RemoveRecursive(_) => OpCode::RemoveRecursive,
            Request::CheckStat(_) => OpCode::CheckStat,
            Request::TryRemove(_) => OpCode::TryRemove,
            Request::FilteredListWithStatsAndData(_) => OpCode::FilteredListWithStatsAndData,
            Request::ListRecursive(_) => OpCode::ListRecursive,
        }
    }

    /// The path the request is about, if it has exactly one.
    pub fn path(&self) -> Option<&str> {
        Some(match self {
            Request::Create(c) => &c.req.path,
            Request::Delete(r) | Request::TryRemove(r) => &r.path,
            Request::Exists(r) => &r.path,
            Request::GetData(r) => &r.path,
            Request::SetData(r) => &r.path,
            Request::GetAcl(r) => &r.path,
            Request::SetAcl(r) => &r.path,
            Request::GetChildren(r) | Request::GetChildren2(r) => &r.path,
            Request::Sync(r) | Request::GetEphemerals(r) | Request::GetAllChildrenNumber(r) => &r.path,
            Request::Check(r) | Request::CheckNotExists(r) => &r.path,
            Request::CheckWatches(r) | Request::RemoveWatches(r) => &r.path,
            Request::AddWatch(r) => &r.path,
            Request::FilteredList(r) | Request::FilteredListWithStatsAndData(r) => &r.path,
            Request::ListRecursive(r) => &r.path,
            Request::RemoveRecursive(r) => &r.path,
            Request::CheckStat(r) => &r.path,
            _ => return None,
        })
    }

    /// Decodes the body that follows a `RequestHeader` with opcode `op`.
    ///
    /// # Errors
    /// `UnknownOpCode` for opcodes the codec does not know, or any record error.
    pub fn decode_body(op: i32, body: &[u8]) -> Result<Request, DecodeError> {
        Self::decode_body_as(op, body, crate::rawstr::Invalid::Escape)
    }

    /// [`decode_body`](Self::decode_body), with strings' bytes that are not UTF-8 treated as
    /// `invalid` says (`rawstr`).
    ///
    /// # Errors
    /// As [`decode_body`](Self::decode_body).
    pub fn decode_body_as(op: i32, body: &[u8], invalid: crate::rawstr::Invalid) -> Result<Request, DecodeError> {
        let mut r = Reader::with_invalid(body, invalid);
        let req = Self::decode_from(op, &mut r)?;
        // Trailing bytes are ignored, as ZooKeeper's jute reader does; the frame length already
        // bounded them.
        Ok(req)
    }

    fn decode_from(op: i32, r: &mut Reader<'_>) -> Result<Request, DecodeError> {
        let op = OpCode::try_from(op).map_err(DecodeError::UnknownOpCode)?;
        let create = |op, r: &mut Reader<'_>| -> Result<Request, DecodeError> {
            Ok(Request::Create(CreateOp { op, req: CreateRequest::decode(r)?, ttl: 0 }))
        };
        Ok(match op {
            OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateIfNotExists => create(op, r)?,
            OpCode::CreateTtl => {
                let t = CreateTtlRequest::decode(r)?;
                let req = CreateRequest { path: t.path, data: t.data, acl: t.acl, flags: t.flags };
                Request::Create(CreateOp { op, req, ttl: t.ttl })
            }
            OpCode::Delete => Request::Delete(DeleteRequest::decode(r)?),
            OpCode::TryRemove => Request::TryRemove(DeleteRequest::decode(r)?),
            OpCode::Exists => Request::Exists(ExistsRequest::decode(r)?),
            OpCode::GetData => Request::GetData(GetDataRequest::decode(r)?),
            OpCode::SetData => Request::SetData(SetDataRequest::decode(r)?),
            OpCode::GetAcl => Request::GetAcl(GetAclRequest::decode(r)?),
            OpCode::SetAcl => Request::SetAcl(SetAclRequest::decode(r)?),
            OpCode::GetChildren => Request::GetChildren(GetChildrenRequest::decode(r)?),
            OpCode::GetChildren2 => Request::GetChildren2(GetChildrenRequest::decode(r)?),
            OpCode::Sync => Request::Sync(PathRecord::decode(r)?),
            OpCode::Ping => Request::Ping,
            OpCode::Check => Request::Check(CheckVersionRequest::decode(r)?),
            OpCode::CheckNotExists => Request::CheckNotExists(CheckVersionRequest::decode(r)?),
            OpCode::Multi => Request::Multi(decode_multi(r)?),
            OpCode::MultiRead => Request::MultiRead(decode_multi(r)?),
            OpCode::Reconfig => Request::Reconfig,
            OpCode::CheckWatches => Request::CheckWatches(WatchesRequest::decode(r)?),
            OpCode::RemoveWatches => Request::RemoveWatches(WatchesRequest::decode(r)?),
            OpCode::CloseSession => Request::Close,
            OpCode::Auth => Request::Auth(AuthPacket::decode(r)?),
            OpCode::SetWatches => Request::SetWatches(SetWatches::decode(r)?),
            OpCode::SetWatches2 => Request::SetWatches2(SetWatches2::decode(r)?),
            OpCode::GetEphemerals => Request::GetEphemerals(PathRecord::decode(r)?),
            OpCode::GetAllChildrenNumber => Request::GetAllChildrenNumber(PathRecord::decode(r)?),
            OpCode::AddWatch => Request::AddWatch(AddWatchRequest::decode(r)?),
            OpCode::WhoAmI => Request::WhoAmI,
            OpCode::FilteredList => Request::FilteredList(ListRequest::decode_as(r, false)?),
            OpCode::FilteredListWithStatsAndData => {
                Request::FilteredListWithStatsAndData(ListRequest::decode_as(r, true)?)
            }
            OpCode::ListRecursive => Request::ListRecursive(ListRecursiveRequest::decode(r)?),
            OpCode::RemoveRecursive => Request::RemoveRecursive(RemoveRecursiveRequest::decode(r)?),
            OpCode::CheckStat => Request::CheckStat(CheckStatRequest::decode(r)?),
            OpCode::Notification | OpCode::DeleteContainer | OpCode::Sasl | OpCode::CreateSession | OpCode::Error => {
                return Err(DecodeError::UnknownOpCode(op as i32))
            }
        })
    }

    /// Encodes the body (without header) of this request.
    pub fn encode_body(&self, out: &mut BytesMut) {
        match self {
            Request::Create(c) if c.op == OpCode::CreateTtl => CreateTtlRequest {
                path: c.req.path.clone(),
                data: c.req.data.clone(),
                acl: c.req.acl.clone(),
                flags: c.req.flags,
                ttl: c.ttl,
            }
            .encode(out),
            Request::Create(c) => c.req.encode(out),
            Request::Delete(r) | Request::TryRemove(r) => r.encode(out),
            Request::Exists(r) => r.encode(out),
            Request::GetData(r) => r.encode(out),
            Request::SetData(r) => r.encode(out),
            Request::GetAcl(r) => r.encode(out),
            Request::SetAcl(r) => r.encode(out),
            Request::GetChildren(r) | Request::GetChildren2(r) => r.encode(out),
            Request::Sync(r) | Request::GetEphemerals(r) | Request::GetAllChildrenNumber(r) => r.encode(out),
            Request::Check(r) | Request::CheckNotExists(r) => r.encode(out),
            Request::Multi(ops) | Request::MultiRead(ops) => {
                for op in ops {
                    MultiHeader::op(op.op() as i32, -1).encode(out);
                    op.encode_body(out);
                }
                MultiHeader::encode_end(out);
            }
            Request::CheckWatches(r) | Request::RemoveWatches(r) => r.encode(out),
            Request::Auth(r) => r.encode(out),
            Request::SetWatches(r) => r.encode(out),
            Request::SetWatches2(r) => r.encode(out),
            Request::AddWatch(r) => r.encode(out),
            Request::FilteredList(r) => r.encode_as(out, false),
            Request::FilteredListWithStatsAndData(r) => r.encode_as(out, true),
            Request::ListRecursive(r) => r.encode(out),
            Request::RemoveRecursive(r) => r.encode(out),
            Request::CheckStat(r) => r.encode(out),
            Request::Ping | Request::Close | Request::WhoAmI | Request::Reconfig => {}
        }
    }
}

fn decode_multi(r: &mut Reader<'_>) -> Result<Vec<Request>, DecodeError> {
    let mut ops = Vec::new();
    loop {
        let h = MultiHeader::read(r)?;
        if h.done {
            return Ok(ops);
        }
        if h.op == OpCode::Multi as i32 || h.op == OpCode::MultiRead as i32 {
            return Err(DecodeError::Malformed("nested multi"));
        }
        ops.push(Request::decode_from(h.op, r)?);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::acl::Acl;

    fn round_trip(req: Request) {
        let mut out = BytesMut::new();
        req.encode_body(&mut out);
        assert_eq!(Request::decode_body(req.op() as i32, &out).unwrap(), req);
        if !out.is_empty() {
            assert!(Request::decode_body(req.op() as i32, &out[..out.len() - 1]).is_err(), "short {req:?}");
        }
    }

    #[test]
    fn every_request_round_trips() {
        let create = CreateRequest { path: "/a".into(), data: Some(b"d".to_vec()), acl: Acl::open(), flags: 0 };
        for op in [OpCode::Create, OpCode::Create2, OpCode::CreateContainer, OpCode::CreateIfNotExists] {
            round_trip(Request::Create(CreateOp { op, req: create.clone(), ttl: 0 }));
        }
        round_trip(Request::Create(CreateOp { op: OpCode::CreateTtl, req: create.clone(), ttl: 5000 }));
        round_trip(Request::Delete(DeleteRequest { path: "/a".into(), version: -1 }));
        round_trip(Request::TryRemove(DeleteRequest { path: "/a".into(), version: 2 }));
        round_trip(Request::GetData(GetDataRequest { path: "/a".into(), watch: true }));
        round_trip(Request::SetData(SetDataRequest { path: "/a".into(), data: Some(vec![]), version: 1 }));
        round_trip(Request::GetChildren2(GetChildrenRequest { path: "/".into(), watch: false }));
        round_trip(Request::Multi(vec![
            Request::Create(CreateOp { op: OpCode::Create, req: create, ttl: 0 }),
            Request::Check(CheckVersionRequest { path: "/a".into(), version: 0 }),
            Request::Delete(DeleteRequest { path: "/a".into(), version: -1 }),
        ]));
        round_trip(Request::MultiRead(vec![Request::GetData(GetDataRequest { path: "/a".into(), watch: false })]));
        round_trip(Request::AddWatch(AddWatchRequest { path: "/".into(), mode: 1 }));
        round_trip(Request::FilteredList(ListRequest { path: "/".into(), list_type: 2, ..Default::default() }));
        round_trip(Request::FilteredListWithStatsAndData(ListRequest {
            path: "/".into(),
            with_data: true,
            ..Default::default()
        }));
        round_trip(Request::ListRecursive(ListRecursiveRequest { path: "/".into(), limit: 7 }));
        round_trip(Request::RemoveRecursive(RemoveRecursiveRequest { path: "/x".into(), limit: 10 }));
        round_trip(Request::CheckStat(CheckStatRequest { path: "/x".into(), version: -1, stat: Default::default() }));
        round_trip(Request::Ping);
    }

    #[test]
    fn unknown_and_nested_are_rejected() {
        assert_eq!(Request::decode_body(77, &[]), Err(DecodeError::UnknownOpCode(77)));
        let mut out = BytesMut::new();
        MultiHeader::op(14, -1).encode(&mut out);
        MultiHeader::encode_end(&mut out);
        MultiHeader::encode_end(&mut out);
        assert!(Request::decode_body(14, &out).is_err());
    }
}
