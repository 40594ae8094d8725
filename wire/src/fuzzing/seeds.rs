//! One valid frame body of every request and reply shape: what the proptests mutate, and what
//! `write_fuzz_seeds` writes out as a starting corpus for `cargo fuzz`.

use bytes::BytesMut;

use crate::jute::Encode;
use crate::opcode::OpCode;
use crate::records::acl::{Acl, GetAclRequest, SetAclRequest};
use crate::records::children::GetChildrenRequest;
use crate::records::connect::{ConnectRequest, ConnectResponse};
use crate::records::create::CreateRequest;
use crate::records::data::{
    CheckVersionRequest, DeleteRequest, ExistsRequest, GetDataRequest, PathRecord, SetDataRequest,
};
use crate::records::header::{ReplyHeader, RequestHeader, WatcherEvent};
use crate::records::keeper_ext::{
    Buffer, CheckStatRequest, ListRecursiveRequest, ListRequest, ListWithStatsAndDataResponse, RemoveRecursiveRequest,
};
use crate::records::session::{AuthPacket, ClientInfo};
use crate::records::stat::Stat;
use crate::records::watches::{AddWatchRequest, SetWatches, SetWatches2, WatchesRequest};
use crate::request::{CreateOp, Request};
use crate::response::{MultiResult, Response};

fn create(op: OpCode, flags: i32, ttl: i64) -> Request {
    let req = CreateRequest { path: "/a".into(), data: Some(b"d".to_vec()), acl: Acl::open(), flags };
    Request::Create(CreateOp { op, req, ttl })
}

/// One request of every variant.
pub fn requests() -> Vec<Request> {
    let path = || "/a/b".to_string();
    let get = Request::GetData(GetDataRequest { path: path(), watch: true });
    let list = ListRequest { path: path(), watch: true, list_type: 2, with_stat: true, with_data: true };
    vec![
        create(OpCode::Create, 0, 0),
        create(OpCode::Create2, 3, 0),
        create(OpCode::CreateContainer, 4, 0),
        create(OpCode::CreateTtl, 5, 60_000),
        create(OpCode::CreateIfNotExists, 0, 0),
        Request::Delete(DeleteRequest { path: path(), version: -1 }),
        Request::Exists(ExistsRequest { path: path(), watch: false }),
        get.clone(),
        Request::SetData(SetDataRequest { path: path(), data: Some(vec![0; 9]), version: 3 }),
        Request::GetAcl(GetAclRequest { path: path() }),
        Request::SetAcl(SetAclRequest { path: path(), acl: vec![Acl::new(31, "digest", "u:h=")], version: 0 }),
        Request::GetChildren(GetChildrenRequest { path: path(), watch: true }),
        Request::GetChildren2(GetChildrenRequest { path: "/".into(), watch: false }),
        Request::Sync(PathRecord { path: path() }),
        Request::Ping,
        Request::Check(CheckVersionRequest { path: path(), version: 1 }),
        Request::Multi(vec![
            create(OpCode::Create, 2, 0),
            Request::Check(CheckVersionRequest { path: path(), version: 0 }),
        ]),
        Request::MultiRead(vec![get, Request::GetChildren(GetChildrenRequest { path: "/".into(), watch: false })]),
        Request::Reconfig,
        Request::CheckWatches(WatchesRequest { path: path(), watcher_type: 3 }),
        Request::RemoveWatches(WatchesRequest { path: path(), watcher_type: 1 }),
        Request::Close,
        Request::Auth(AuthPacket { auth_type: 0, scheme: "digest".into(), auth: b"u:p".to_vec() }),
        Request::SetWatches(SetWatches { relative_zxid: 7, data_watches: vec![path()], ..Default::default() }),
        Request::SetWatches2(SetWatches2 {
            relative_zxid: 7,
            persistent_recursive_watches: vec!["/".into()],
            ..Default::default()
        }),
        Request::GetEphemerals(PathRecord { path: "/".into() }),
        Request::GetAllChildrenNumber(PathRecord { path: "/".into() }),
        Request::AddWatch(AddWatchRequest { path: path(), mode: 1 }),
        Request::WhoAmI,
        Request::FilteredList(ListRequest { with_stat: false, with_data: false, ..list.clone() }),
        Request::CheckNotExists(CheckVersionRequest { path: path(), version: -1 }),
        Request::RemoveRecursive(RemoveRecursiveRequest { path: path(), limit: 100 }),
        Request::CheckStat(CheckStatRequest {
            path: path(),
            version: -1,
            stat: Stat { version: 2, ..Default::default() },
        }),
        Request::TryRemove(DeleteRequest { path: path(), version: 4 }),
        Request::FilteredListWithStatsAndData(list),
        Request::ListRecursive(ListRecursiveRequest { path: "/".into(), limit: 1000 }),
    ]
}

/// One successful reply body per reply shape, with the opcode it answers.
pub fn responses() -> Vec<(OpCode, Response)> {
    let stat = Stat {
        czxid: 1,
        mzxid: 2,
        ctime: 3,
        mtime: 4,
        version: 5,
        cversion: 6,
        aversion: 7,
        pzxid: 8,
        ..Default::default()
    };
    let names = vec!["a".to_string(), "b".to_string()];
    vec![
        (OpCode::Delete, Response::Empty),
        (OpCode::Create, Response::Create("/a0000000001".into())),
        (OpCode::Create2, Response::Create2 { path: "/a".into(), stat: stat.clone() }),
        (OpCode::Exists, Response::Stat(stat.clone())),
        (OpCode::GetData, Response::Data { data: Some(b"hello".to_vec()), stat: stat.clone() }),
        (OpCode::GetAcl, Response::Acl { acl: Acl::open(), stat: stat.clone() }),
        (OpCode::GetChildren, Response::Children(names.clone())),
        (OpCode::GetChildren2, Response::Children2 { children: names.clone(), stat: stat.clone() }),
        (OpCode::Sync, Response::Path("/a".into())),
        (OpCode::GetEphemerals, Response::Paths(vec!["/e".into()])),
        (OpCode::GetAllChildrenNumber, Response::Number(12)),
        (OpCode::AddWatch, Response::Number(0)),
        (
            OpCode::FilteredListWithStatsAndData,
            Response::ListWithStatsAndData(ListWithStatsAndDataResponse {
                names: names.clone(),
                stat: stat.clone(),
                stats: vec![stat.clone(), Stat::default()],
                data: vec![Buffer(b"x".to_vec()), Buffer(vec![])],
            }),
        ),
        (OpCode::WhoAmI, Response::WhoAmI(vec![ClientInfo { auth_scheme: "ip".into(), user: "127.0.0.1".into() }])),
        (
            OpCode::Multi,
            Response::Multi(vec![
                MultiResult::Ok(OpCode::Create, Response::Create("/a".into())),
                MultiResult::Ok(OpCode::SetData, Response::Stat(stat.clone())),
                MultiResult::Error(0),
                MultiResult::Error(-101),
            ]),
        ),
        (
            OpCode::MultiRead,
            Response::Multi(vec![
                MultiResult::Ok(OpCode::GetData, Response::Data { data: Some(vec![1]), stat }),
                MultiResult::Ok(OpCode::GetChildren, Response::Children(names)),
                MultiResult::OpError(OpCode::GetData, -101),
            ]),
        ),
    ]
}

/// Frame bodies (without the length prefix): requests with headers, replies with headers,
/// an error reply, a watch event, and the four handshake forms.
/// The body (no header) of every seed request: the `request_body` target's corpus.
pub fn request_bodies() -> Vec<Vec<u8>> {
    requests()
        .iter()
        .map(|req| {
            let mut b = BytesMut::new();
            req.encode_body(&mut b);
            b.to_vec()
        })
        .collect()
}

pub fn seed_bodies() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (xid, req) in (1..).zip(requests()) {
        let mut b = BytesMut::new();
        RequestHeader { xid, op: req.op() as i32 }.encode(&mut b);
        req.encode_body(&mut b);
        out.push(b.to_vec());
    }
    for (xid, (_, resp)) in (1..).zip(responses()) {
        let mut b = ReplyHeader { xid, zxid: 0x1_0000_0005, err: 0 }.to_bytes();
        resp.encode(&mut b);
        out.push(b.to_vec());
    }
    out.push(ReplyHeader { xid: 3, zxid: 9, err: -101 }.to_bytes().to_vec());
    let mut event = ReplyHeader { xid: -1, zxid: -1, err: 0 }.to_bytes();
    WatcherEvent { event_type: 3, state: 3, path: "/a".into() }.encode(&mut event);
    out.push(event.to_vec());
    for read_only in [None, Some(false)] {
        let req = ConnectRequest { timeout_ms: 30_000, passwd: vec![0; 16], read_only, ..Default::default() };
        out.push(req.to_bytes().to_vec());
        let resp = ConnectResponse {
            timeout_ms: 10_000,
            session_id: 0x42,
            passwd: vec![1; 16],
            read_only,
            ..Default::default()
        };
        out.push(resp.to_bytes().to_vec());
    }
    out
}
