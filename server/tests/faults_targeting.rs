//! Which requests a rule hits: seeded probabilities that replay, nth, count, multi sub-ops,
//! sessions, and the exemption of pings.

mod faults_support;

use faults_support::{connect, exists_fresh, mk, start, within};
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::ClientError;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::SetDataRequest;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request, ZkError};

/// Indices (0-based) of the `n` getData requests that failed with the rule's error.
async fn failing_reads(seed: u64, n: usize) -> Vec<usize> {
    let tk = start(Flavor::Keeper, seed).await;
    let c = connect(&tk).await;
    mk(&c, "/p").await.unwrap();
    tk.add_fault("error:code=-4,op=getData,prob=0.3").unwrap();
    let mut failed = Vec::new();
    for i in 0..n {
        match within(c.get_data("/p", false)).await {
            Ok(_) => {}
            Err(ClientError::Zk(ZkError::ConnectionLoss)) => failed.push(i),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
    assert_eq!(tk.fault_rules()[0].fired as usize, failed.len());
    failed
}

#[tokio::test]
async fn seeded_probability_replays_exactly() {
    let a = failing_reads(7, 60).await;
    let b = failing_reads(7, 60).await;
    assert_eq!(a, b, "same seed, same requests: same faults");
    assert!(!a.is_empty() && a.len() < 60, "prob=0.3 fired {} of 60", a.len());
    assert_ne!(a, failing_reads(8, 60).await, "another seed draws differently");
}

#[tokio::test]
async fn nth_and_count() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/n").await.unwrap();
    let outcomes = |tk_rule: &'static str| {
        let (tk, c) = (&tk, &c);
        async move {
            let id = tk.add_fault(tk_rule).unwrap();
            let mut v = Vec::new();
            for _ in 0..6 {
                v.push(within(c.exists("/n", false)).await.is_err());
            }
            tk.remove_fault(id);
            v
        }
    };
    assert_eq!(outcomes("error:code=-4,op=exists,nth=3").await, [false, false, true, false, false, false]);
    assert_eq!(outcomes("error:code=-4,op=exists,count=2").await, [true, true, false, false, false, false]);
    assert_eq!(outcomes("error:code=-4,op=exists,nth=2,count=1").await, [false, true, false, false, false, false]);
}

fn create(path: &str) -> Request {
    Request::Create(CreateOp {
        op: OpCode::Create,
        req: CreateRequest { path: path.into(), data: Some(vec![]), acl: Acl::open(), flags: 0 },
        ttl: 0,
    })
}

#[tokio::test]
async fn multi_matches_by_sub_op_and_sub_path() {
    let tk = start(Flavor::Keeper, 1).await;
    let c = connect(&tk).await;
    mk(&c, "/m").await.unwrap();
    mk(&c, "/x").await.unwrap();
    let set_x = || Request::SetData(SetDataRequest { path: "/x".into(), data: Some(b"v".to_vec()), version: -1 });

    // By sub-op: a setData inside a multi is caught by op=setData.
    tk.add_fault("error:code=-4,op=setData,count=1").unwrap();
    let err = within(c.multi(vec![create("/m/a"), set_x()])).await.unwrap_err();
    assert_eq!(err, ClientError::Zk(ZkError::ConnectionLoss));
    assert!(within(c.exists("/m/a", false)).await.unwrap().is_none(), "a faulted multi is not applied");

    // By sub-op path: op=create,path=/m/* holds for the create sub-op.
    tk.add_fault("drop-request:op=create,path=/m/*,count=1").unwrap();
    assert!(within(c.multi(vec![set_x(), create("/m/b")])).await.unwrap_err().is_connection_loss());
    assert!(!exists_fresh(&tk, "/m/b").await);
    let ev = tk.fault_events().pop().unwrap();
    assert_eq!((ev.op, ev.path.as_deref()), ("multi", Some("/m/b")));

    // Op and path must hold for the same sub-op: a create elsewhere plus a setData under /m
    // is not a create under /m.
    let c = connect(&tk).await;
    tk.add_fault("drop-request:op=create,path=/m/*").unwrap();
    within(c.multi(vec![
        create("/x/c"),
        Request::SetData(SetDataRequest { path: "/m".into(), data: Some(vec![]), version: -1 }),
    ]))
    .await
    .unwrap();
    // And op=multi matches the multi itself.
    tk.clear_faults();
    tk.add_fault("error:code=-4,op=multi,count=1").unwrap();
    assert_eq!(within(c.multi(vec![create("/m/d")])).await.unwrap_err(), ClientError::Zk(ZkError::ConnectionLoss));
    assert!(within(c.get_data("/x", false)).await.is_ok(), "op=multi leaves plain requests alone");
}

#[tokio::test]
async fn session_filter_and_exempt_pings() {
    let tk = start(Flavor::Keeper, 1).await;
    let (a, b) = (connect(&tk).await, connect(&tk).await);
    mk(&a, "/s").await.unwrap();
    tk.add_fault(&format!("error:code=-4,session={:#x}", b.session_id())).unwrap();
    assert!(within(a.exists("/s", false)).await.is_ok());
    assert_eq!(within(b.exists("/s", false)).await.unwrap_err(), ClientError::Zk(ZkError::ConnectionLoss));
    // Pings and auth are left alone by a rule that does not name them...
    tk.clear_faults();
    tk.add_fault("reset").unwrap();
    within(a.ping()).await.unwrap();
    within(a.add_auth("digest", b"u:p")).await.unwrap();
    assert!(tk.fault_events().iter().all(|e| e.op != "ping" && e.op != "auth"));
    // ...and hit by one that does.
    tk.clear_faults();
    tk.add_fault("reset:op=ping").unwrap();
    assert!(within(a.ping()).await.unwrap_err().is_connection_loss());
    assert_eq!(tk.fault_events().last().unwrap().op, "ping");
}
