//! Each fault kind, black-box over a real socket: what the client sees, and what the server
//! did (or did not do) with the request.

mod faults_support;

use std::time::{Duration, Instant};

use faults_support::{connect, exists_fresh, mk, resume, start, within};
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{ClientError, LossReason};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::{Acl, ZkError};

/// A lost reply to a create: the client sees a connection loss, yet the node exists, and the
/// session (with its ephemerals) survives for a resuming client.
#[tokio::test]
async fn drop_response_commits_then_drops_the_connection_zookeeper() {
    let tk = start(Flavor::Zookeeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/f").await.unwrap();
    let id = tk.add_fault("drop-response:op=create,path=/f/*,count=2").unwrap();
    let err = mk(&c, "/f/a").await.unwrap_err();
    assert!(err.is_connection_loss(), "{err:?}");
    assert!(c.is_closed());

    let c2 = resume(&tk, &c).await.expect("the session outlives the connection");
    assert_eq!(c2.session_id(), c.session_id());
    assert!(within(c2.exists("/f/a", false)).await.unwrap().is_some(), "a dropped response still commits");
    // The second firing is on an ephemeral: it must survive the lost connection too.
    let err = within(c2.create("/f/e", b"", &Acl::open(), create_mode::EPHEMERAL)).await.unwrap_err();
    assert!(err.is_connection_loss(), "{err:?}");
    let c3 = resume(&tk, &c).await.unwrap();
    let stat = within(c3.exists("/f/e", false)).await.unwrap().expect("ephemeral kept");
    assert_eq!(stat.ephemeral_owner, c.session_id());
    // The rule is used up: the next create is answered normally.
    assert_eq!(mk(&c3, "/f/b").await.unwrap(), "/f/b");

    let events = tk.fault_events();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (events[0].rule, events[0].kind, events[0].op, events[0].applied),
        (id, "drop-response", "create", true)
    );
    assert_eq!(events[0].path.as_deref(), Some("/f/a"));
    assert_eq!(events[0].session, c.session_id());
    assert_eq!(tk.fault_rules()[0].fired, 2);
}

#[tokio::test]
async fn drop_response_keeper_flavor_fresh_session_sees_the_write() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/f").await.unwrap();
    tk.drop_next_response("op=create,path=/f/a").unwrap();
    assert!(mk(&c, "/f/a").await.unwrap_err().is_connection_loss());
    let c2 = connect(&tk).await;
    assert!(within(c2.exists("/f/a", false)).await.unwrap().is_some());
    assert_eq!(mk(&c2, "/f/b").await.unwrap(), "/f/b");
}

#[tokio::test]
async fn drop_request_does_not_apply() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/f").await.unwrap();
    tk.drop_next_request("op=create").unwrap();
    assert_eq!(mk(&c, "/f/a").await, Err(ClientError::ConnectionLoss(LossReason::Eof)));
    assert!(!exists_fresh(&tk, "/f/a").await);
    let ev = &tk.fault_events()[0];
    assert_eq!((ev.kind, ev.applied), ("drop-request", false));
}

#[tokio::test]
async fn error_replies_with_the_code_without_applying() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/f").await.unwrap();
    tk.add_fault("error:code=-112,op=create,count=1").unwrap();
    assert_eq!(mk(&c, "/f/a").await, Err(ClientError::Zk(ZkError::SessionExpired)));
    // The connection stays up and nothing was applied.
    assert!(within(c.exists("/f/a", false)).await.unwrap().is_none());
    assert_eq!(mk(&c, "/f/a").await.unwrap(), "/f/a");
    tk.fail_next("op=setData", ZkError::OperationTimeout.code()).unwrap();
    let err = within(c.set_data("/f/a", b"x", -1)).await.unwrap_err();
    assert_eq!(err.code(), Some(ZkError::OperationTimeout.code()));
    assert_eq!(within(c.get_data("/f/a", false)).await.unwrap().0, b"");
}

/// A delayed reply arrives no sooner than the delay, and a request pipelined behind it waits
/// too (FIFO). Only lower bounds: machines are noisy.
#[tokio::test]
async fn delay_holds_the_reply_and_everything_behind_it() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/d").await.unwrap();
    let delay = Duration::from_millis(300);
    tk.delay_next("op=getData,path=/d", delay).unwrap();
    let t0 = Instant::now();
    let (first, second) = within(async {
        tokio::join!(async { (c.get_data("/d", false).await, t0.elapsed()) }, async {
            (c.exists("/d", false).await, t0.elapsed())
        })
    })
    .await;
    assert!(first.0.is_ok() && second.0.unwrap().is_some());
    assert!(first.1 >= delay, "delayed reply came after {:?}", first.1);
    assert!(second.1 >= delay, "the reply queued behind it came after {:?}", second.1);
    // A delayed write is applied at once; only its reply waits.
    tk.delay_next("op=create", Duration::from_millis(200)).unwrap();
    let t0 = Instant::now();
    assert_eq!(mk(&c, "/d/x").await.unwrap(), "/d/x");
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(tk.fault_events().iter().all(|e| e.kind == "delay" && e.applied));
}

#[tokio::test]
async fn reset_closes_before_processing() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/r").await.unwrap();
    tk.add_fault("reset:op=setData,count=1").unwrap();
    let err = within(c.set_data("/r", b"new", -1)).await.unwrap_err();
    // A reset is an abort (RST), which the client reads as a socket error, not an orderly EOF.
    assert!(matches!(err, ClientError::ConnectionLoss(LossReason::Io(_))), "{err:?}");
    let c2 = connect(&tk).await;
    assert_eq!(within(c2.get_data("/r", false)).await.unwrap().0, b"", "a reset request is not applied");
    let ev = &tk.fault_events()[0];
    assert_eq!((ev.kind, ev.op, ev.applied), ("reset", "setData", false));
}

/// The session ends as on a timeout: ephemerals and watches go, and a client that resumes
/// hears SESSION_EXPIRED.
#[tokio::test]
async fn expire_session_ends_the_session() {
    let tk = start(Flavor::Zookeeper, 1).await;
    let c = connect(&tk).await;
    within(c.create("/eph", b"", &Acl::open(), create_mode::EPHEMERAL)).await.unwrap();
    assert!(within(c.exists("/watched", true)).await.unwrap().is_none());
    let watches_before = tk.watch_count();
    tk.expire_next("op=getData").unwrap();
    assert!(within(c.get_data("/eph", false)).await.unwrap_err().is_connection_loss());
    assert!(!tk.sessions().contains(&c.session_id()));
    assert!(!exists_fresh(&tk, "/eph").await, "the ephemeral went with the session");
    assert_eq!(tk.watch_count(), watches_before - 1);
    assert_eq!(resume(&tk, &c).await.unwrap_err(), ClientError::SessionExpired);
    let ev = &tk.fault_events()[0];
    assert_eq!((ev.kind, ev.session, ev.applied), ("expire-session", c.session_id(), false));
}
