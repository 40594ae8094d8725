//! The client against scripted fake servers: handshake forms, xid matching, events between
//! replies, error codes, and each way a connection can be lost.

mod fake;
mod session;

use tokio::time::timeout;

use super::*;
use crate::error::ZkError;
use crate::opcode::OpCode;
use crate::records::data::GetDataRequest;
use crate::records::header::event_type;
use crate::response::Response;
use crate::Stat;
use fake::{serve, session, WAIT};

fn get(path: &str) -> Request {
    Request::GetData(GetDataRequest { path: path.into(), watch: true })
}

fn data(d: &[u8], version: i32) -> Response {
    Response::Data { data: Some(d.to_vec()), stat: Stat { version, ..Default::default() } }
}

#[tokio::test]
async fn handshake_forms_are_sent_and_reported_exactly() {
    let (addr, server) = serve(|mut c| async move {
        let (req, len) = c.read_connect().await;
        assert_eq!((len, req.read_only, req.timeout_ms, req.passwd.len()), (45, Some(false), 30_000, 16));
        c.send_record(&session(10_000)).await;
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    assert_eq!((client.handshake_len(), client.negotiated_timeout_ms(), client.session_id()), (37, 10_000, 0x42));
    assert_eq!(client.connect_response().read_only, Some(false));
    assert_eq!(client.session_passwd(), &[7; 16]);
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();

    let (addr, server) = serve(|mut c| async move {
        let (req, len) = c.read_connect().await;
        assert_eq!((len, req.read_only, req.session_id, req.last_zxid_seen), (44, None, 9, 77));
        c.send_record(&ConnectResponse { read_only: None, ..session(4000) }).await;
        c.frame().await;
    })
    .await;
    let opts = ConnectOptions { read_only: None, last_zxid_seen: 77, ..ConnectOptions::resume(9, vec![1; 16]) };
    let client = Client::connect(addr, opts).await.unwrap();
    assert_eq!((client.handshake_len(), client.connect_response().read_only), (36, None));
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn expired_session_and_bad_handshakes_are_errors() {
    let (addr, _server) = serve(|mut c| async move {
        c.accept(&ConnectResponse { timeout_ms: 0, session_id: 0, passwd: vec![0; 16], ..Default::default() }).await;
    })
    .await;
    assert_eq!(Client::connect(addr, ConnectOptions::default()).await.unwrap_err(), ClientError::SessionExpired);

    let (addr, _server) = serve(|mut c| async move {
        c.read_connect().await;
        c.send_raw(&[0, 0, 0, 3, 1, 2, 3]).await;
    })
    .await;
    let err = Client::connect(addr, ConnectOptions::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect(ref m) if m.contains("handshake")), "{err:?}");

    let (addr, _server) = serve(|mut c| async move {
        c.read_connect().await;
        tokio::time::sleep(WAIT).await;
    })
    .await;
    let opts = ConnectOptions { connect_timeout: std::time::Duration::from_millis(100), ..Default::default() };
    assert_eq!(Client::connect(addr, opts).await.unwrap_err(), ClientError::ConnectTimeout);
}

#[tokio::test]
async fn pipelined_replies_match_by_xid_and_events_interleave() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        let mut xids = Vec::new();
        for _ in 0..3 {
            let (h, req) = c.request().await.unwrap();
            assert_eq!(h.op, OpCode::GetData as i32);
            xids.push((h.xid, req.path().unwrap().to_string()));
        }
        assert_eq!(xids.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3], "xids count from 1 in send order");
        c.reply(1, 100, 0, &data(b"one", 1)).await;
        c.event(event_type::NODE_DATA_CHANGED, "/a").await;
        c.reply(2, 101, ZkError::NoNode.code(), &Response::Empty).await;
        // A code no codec knows must come through as its number.
        c.reply(3, 102, -4242, &Response::Empty).await;
        c.frame().await;
    })
    .await;
    let mut client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut events = client.events().unwrap();
    assert!(client.events().is_none(), "the event channel is taken once");
    // Sent one after the other so the xids follow the paths; the replies are awaited together.
    let (r1, r2, r3) = tokio::join!(client.call(get("/a")), client.call(get("/b")), client.call(get("/c")));
    let (r1, r2, r3) = (r1.unwrap(), r2.unwrap(), r3.unwrap());
    assert_eq!((r1.header.xid, r1.header.zxid, r1.seq), (1, 100, 1));
    assert_eq!(r1.body, Ok(data(b"one", 1)));
    assert_eq!((r2.header.zxid, r2.body.clone(), r2.seq), (101, Err(ZkErrorOrCode::Known(ZkError::NoNode)), 3));
    assert_eq!((r3.body.clone(), r3.seq), (Err(ZkErrorOrCode::Unknown(-4242)), 4));
    assert_eq!(r3.into_response(), Err(ClientError::UnknownCode(-4242)));
    let ev = timeout(WAIT, events.recv()).await.unwrap().unwrap();
    assert_eq!((ev.seq, ev.event.path.as_str(), ev.event.event_type), (2, "/a", event_type::NODE_DATA_CHANGED));
    assert!(r1.seq < ev.seq && ev.seq < r2.seq, "the event arrived between the first two replies");
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn out_of_order_reply_is_a_protocol_error_that_fails_everything() {
    let (addr, _server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        c.request().await.unwrap();
        c.request().await.unwrap();
        c.reply(2, 5, 0, &data(b"", 0)).await;
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let (r1, r2) = tokio::join!(client.call(get("/a")), client.call(get("/b")));
    for r in [r1, r2] {
        let err = r.unwrap_err();
        assert!(
            matches!(&err, ClientError::ConnectionLoss(LossReason::Protocol(m)) if m.contains("out of order")),
            "{err:?}"
        );
    }
    assert!(client.is_closed());
    assert!(matches!(client.loss_reason(), Some(LossReason::Protocol(_))));
    assert!(client.get_data("/a", false).await.unwrap_err().is_connection_loss());
}

#[tokio::test]
async fn typed_ops_unpack_bodies_and_map_errors() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        let (h, req) = c.request().await.unwrap();
        assert_eq!(req.op(), OpCode::Exists);
        c.reply(h.xid, 1, ZkError::NoNode.code(), &Response::Empty).await;
        let (h, _) = c.request().await.unwrap();
        c.reply(h.xid, 2, 0, &Response::Create("/n0000000001".into())).await;
        let (h, _) = c.request().await.unwrap();
        c.reply(h.xid, 3, ZkError::NodeExists.code(), &Response::Empty).await;
        let (h, _) = c.request().await.unwrap();
        // A body of the wrong shape for the op: the frame is intact, only the call fails.
        c.reply(h.xid, 4, 0, &Response::Number(3)).await;
        let (h, _) = c.request().await.unwrap();
        c.reply(h.xid, 5, 0, &data(b"x", 2)).await;
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    assert_eq!(client.exists("/none", true).await, Ok(None));
    assert_eq!(client.create("/n", b"", &crate::Acl::open(), 2).await.unwrap(), "/n0000000001");
    assert_eq!(client.create("/n", b"", &crate::Acl::open(), 0).await, Err(ClientError::Zk(ZkError::NodeExists)));
    assert!(matches!(client.sync("/").await, Err(ClientError::BadReply { op: "sync", .. })));
    assert_eq!(client.get_data("/x", false).await.unwrap().0, b"x");
    assert!(!client.is_closed());
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn call_header_returns_the_header_and_skips_the_body() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        let (h, _) = c.request().await.unwrap();
        c.reply(h.xid, 7, 0, &data(b"skipped", 1)).await;
        let (h, _) = c.request().await.unwrap();
        c.reply(h.xid, 8, ZkError::NoNode.code(), &Response::Empty).await;
        let (h, _) = c.request().await.unwrap();
        // A body that `call` would refuse: `call_header` does not read it.
        c.reply(h.xid, 9, 0, &Response::Number(3)).await;
        let (h, _) = c.request().await.unwrap();
        c.reply(h.xid, 10, 0, &data(b"read", 2)).await;
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let ok = client.call_header(get("/a")).await.unwrap();
    assert_eq!((ok.xid, ok.zxid, ok.err), (1, 7, 0));
    let missing = client.call_header(get("/b")).await.unwrap();
    assert_eq!((missing.zxid, missing.err), (8, ZkError::NoNode.code()));
    assert_eq!(
        client.call_header(Request::Sync(crate::records::data::PathRecord { path: "/".into() })).await.unwrap().zxid,
        9
    );
    // The connection goes on, and a decoded call after them still decodes.
    assert_eq!(client.call(get("/c")).await.unwrap().body, Ok(data(b"read", 2)));
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}
