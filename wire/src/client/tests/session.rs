//! Session-level behaviour against fake servers: reserved xids, pings, close, and the ways a
//! connection can be lost.

use std::time::{Duration, Instant};

use tokio::time::timeout;

use super::fake::{serve, session, WAIT};
use super::get;
use crate::client::{Client, ClientError, ConnectOptions, LossReason};
use crate::error::ZkError;
use crate::opcode::{OpCode, AUTH_XID, PING_XID, SET_WATCHES_XID};
use crate::records::watches::SetWatches;
use crate::response::Response;

#[tokio::test]
async fn reserved_xids_for_ping_auth_and_set_watches() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        let mut seen = Vec::new();
        for _ in 0..4 {
            let (h, req) = c.request().await.unwrap();
            seen.push((h.xid, req.op()));
        }
        assert_eq!(
            seen,
            vec![
                (1, OpCode::GetData),
                (AUTH_XID, OpCode::Auth),
                (PING_XID, OpCode::Ping),
                (SET_WATCHES_XID, OpCode::SetWatches)
            ]
        );
        // ZooKeeper answers auth at once, ahead of the getData still in its pipeline.
        c.reply(AUTH_XID, 0, ZkError::AuthFailed.code(), &Response::Empty).await;
        c.reply(1, 9, ZkError::NoNode.code(), &Response::Empty).await;
        c.reply(PING_XID, 9, 0, &Response::Empty).await;
        c.reply(SET_WATCHES_XID, 9, 0, &Response::Empty).await;
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions { auto_ping: false, ..Default::default() }).await.unwrap();
    let (g, a, p, w) = tokio::join!(
        client.call(get("/a")),
        client.add_auth("digest", b"u:p"),
        client.ping(),
        client.set_watches(SetWatches::default())
    );
    assert_eq!(g.unwrap().seq, 2);
    assert_eq!(a, Err(ClientError::Zk(ZkError::AuthFailed)));
    assert_eq!((p, w), (Ok(()), Ok(())));
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn idle_client_pings_every_third_of_the_timeout() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(300)).await;
        let start = Instant::now();
        for _ in 0..2 {
            let (h, req) = c.request().await.unwrap();
            assert_eq!((h.xid, req.op()), (PING_XID, OpCode::Ping));
            c.reply(PING_XID, 0, 0, &Response::Empty).await;
        }
        assert!(start.elapsed() >= Duration::from_millis(150), "{:?}", start.elapsed());
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    timeout(WAIT, server).await.unwrap().unwrap();
    drop(client);
}

#[tokio::test]
async fn auto_ping_off_sends_nothing() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(150)).await;
        // Nothing at all until the client goes away, well past timeout / 3.
        assert!(c.frame().await.is_none());
    })
    .await;
    let client = Client::connect(addr, ConnectOptions { auto_ping: false, ..Default::default() }).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn close_waits_for_its_reply_then_ends_the_connection() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        let (h, req) = c.request().await.unwrap();
        assert_eq!((h.xid, req.op()), (1, OpCode::CloseSession));
        c.reply(h.xid, 12, 0, &Response::Empty).await;
        assert!(c.frame().await.is_none(), "the client hangs up after the close reply");
    })
    .await;
    let mut client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut events = client.events().unwrap();
    client.close().await.unwrap();
    assert!(client.is_closed());
    assert_eq!(client.loss_reason(), Some(LossReason::Closed));
    assert_eq!(client.ping().await, Err(ClientError::ConnectionLoss(LossReason::Closed)));
    assert!(timeout(WAIT, events.recv()).await.unwrap().is_none(), "the event channel ends with the connection");
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn close_answered_by_a_hangup_counts_as_closed() {
    // ClickHouse Keeper ends the connection instead of replying to closeSession.
    let (addr, _server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        assert_eq!(c.request().await.unwrap().1.op(), OpCode::CloseSession);
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    assert_eq!(client.close().await, Ok(()));
    assert_eq!(client.loss_reason(), Some(LossReason::Eof));
    assert_eq!(client.close().await, Err(ClientError::ConnectionLoss(LossReason::Eof)), "a second close is a loss");
}

#[tokio::test]
async fn server_hangup_fails_pending_and_later_requests() {
    let (addr, _server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        c.request().await.unwrap();
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    assert_eq!(client.get_data("/a", false).await, Err(ClientError::ConnectionLoss(LossReason::Eof)));
    assert!(client.is_closed());
    assert_eq!(client.exists("/a", false).await, Err(ClientError::ConnectionLoss(LossReason::Eof)));
}

#[tokio::test]
async fn oversized_reply_frame_is_a_connection_loss() {
    let (addr, _server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        c.request().await.unwrap();
        c.send_raw(&1025u32.to_be_bytes()).await;
        c.frame().await;
    })
    .await;
    let client = Client::connect(addr, ConnectOptions { max_frame: 1024, ..Default::default() }).await.unwrap();
    let err = client.ping().await.unwrap_err();
    assert_eq!(err, ClientError::ConnectionLoss(LossReason::FrameTooLarge { len: 1025, max: 1024 }));
    assert!(err.to_string().contains("exceeds max_frame"), "{err}");
}

#[tokio::test]
async fn garbage_from_the_server_never_panics() {
    // A short header, an unknown xid, a negative length, a truncated event: each ends the
    // connection as a protocol error.
    let cases: [&[u8]; 4] = [
        &[0, 0, 0, 2, 1, 2],
        &[0, 0, 0, 16, 0, 0, 0, 99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        &[0xff, 0xff, 0xff, 0xf0],
        &[0, 0, 0, 17, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    ];
    for bytes in cases {
        let (addr, _server) = serve(move |mut c| async move {
            c.accept(&session(30_000)).await;
            c.request().await.unwrap();
            c.send_raw(bytes).await;
            c.frame().await;
        })
        .await;
        let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
        let err = client.get_data("/a", false).await.unwrap_err();
        assert!(matches!(err, ClientError::ConnectionLoss(LossReason::Protocol(_))), "{bytes:?}: {err:?}");
    }
}

#[tokio::test]
async fn drop_closes_the_socket_without_closing_the_session() {
    let (addr, server) = serve(|mut c| async move {
        c.accept(&session(30_000)).await;
        assert!(c.frame().await.is_none(), "no closeSession, just the socket closing");
    })
    .await;
    let client = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    drop(client);
    timeout(WAIT, server).await.unwrap().unwrap();
}
