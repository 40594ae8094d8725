//! Pipelined proposals: entries decided before the ones ahead of them commit must see those
//! uncommitted changes, carry the digest the tree will have, and commit to exactly the state
//! one-at-a-time proposing reaches. A failed proposal rolls back only itself.

use proptest::prelude::*;
use testkeeper_wire::records::keeper_ext::RemoveRecursiveRequest;
use testkeeper_wire::{Request, ZkError};

use super::apply::{OpResult, Outcome};
use super::flavor::Flavor;
use super::propose::Decide;
use super::testutil::*;
use super::txn::{Entry, Txn};

fn w(req: &Request) -> Decide<'_> {
    Decide::Write { req, auth: &[] }
}

fn created_path(o: &Outcome) -> String {
    match o {
        Outcome::Ops(v) => match &v[0] {
            OpResult::Created { path, .. } => path.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn sequential_creates_in_one_batch_get_different_suffixes() {
    for flavor in [Flavor::Zookeeper, Flavor::Keeper] {
        let mut h = Harness::new(flavor);
        let s = h.session();
        h.write(s, &create("/q", b"", 0));
        let (a, b) = (create("/q/n-", b"1", 2), create("/q/n-", b"2", 2));
        let e1 = h.propose(s, w(&a));
        let e2 = h.propose(s, w(&b));
        assert_eq!(e2.zxid(), e1.zxid() + 1);
        let (p1, p2) = (created_path(&h.commit(e1).outcome), created_path(&h.commit(e2).outcome));
        assert_eq!((p1.as_str(), p2.as_str()), ("/q/n-0000000000", "/q/n-0000000001"), "{flavor:?}");
        assert_eq!(h.state.tree().digest(), h.state.tree().recompute_digest());
    }
}

#[test]
fn a_create_behind_a_multi_sees_the_multi_and_a_failed_multi_rolls_back_alone() {
    let mut h = Harness::new(Flavor::Zookeeper);
    let s = h.session();
    let multi = Request::Multi(vec![create("/m", b"", 0), create("/m/a", b"", 0)]);
    let bad = Request::Multi(vec![create("/x", b"", 0), create("/missing/y", b"", 0)]);
    let child = create("/m/a/c", b"", 0);
    let after_bad = create("/x", b"", 0);
    let e1 = h.propose(s, w(&multi));
    let e2 = h.propose(s, w(&bad));
    let e3 = h.propose(s, w(&child));
    let e4 = h.propose(s, w(&after_bad));
    assert_eq!(e2.txn(), &Txn::MultiFailed(vec![0, ZkError::NoNode.code()]));
    assert!(matches!(e3.txn(), Txn::Ops(_)), "the create sees the uncommitted multi: {:?}", e3.txn());
    assert!(matches!(e4.txn(), Txn::Ops(_)), "the failed multi's /x was rolled back: {:?}", e4.txn());
    for e in [e1, e2, e3, e4] {
        h.commit(e);
    }
    assert!(h.state.tree().get("/m/a/c").is_some() && h.state.tree().get("/x").is_some());
    assert!(h.state.tree().get("/missing").is_none());
}

#[test]
fn closing_a_session_takes_its_uncommitted_ephemerals() {
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    let e = create("/e", b"", 1);
    let e1 = h.propose(s, w(&e));
    let e2 = h.propose(s, Decide::CloseSession { id: s });
    assert_eq!(e2.txn(), &Txn::CloseSession { id: s, ephemerals: vec!["/e".into()] });
    h.commit(e1);
    h.commit(e2);
    assert!(h.state.tree().get("/e").is_none());
}

#[test]
fn remove_recursive_walks_uncommitted_children() {
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    h.write(s, &create("/r", b"", 0));
    let (c, rr) =
        (create("/r/c", b"", 0), Request::RemoveRecursive(RemoveRecursiveRequest { path: "/r".into(), limit: 10 }));
    let e1 = h.propose(s, w(&c));
    let e2 = h.propose(s, w(&rr));
    h.commit(e1);
    h.commit(e2);
    assert!(h.state.tree().get("/r").is_none());
}

#[test]
fn reset_forgets_uncommitted_decisions() {
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    let a = create("/a", b"", 0);
    let lost = h.propose(s, w(&a));
    let state = h.state.clone();
    h.proposer.reset(&state, 2, lost.index());
    let again = h.propose(s, w(&a));
    assert_eq!((again.index(), again.zxid(), again.term()), (lost.index(), lost.zxid(), 2));
    assert!(matches!(again.txn(), Txn::Ops(_)), "the lost create is not seen: {:?}", again.txn());
    h.commit(again);
}

/// One random request over a small key space, so ops collide.
fn request(kind: u8, key: usize, data: u8) -> Request {
    const PATHS: [&str; 6] = ["/a", "/a/b", "/c", "/a/b/d", "/s", "/s/x"];
    let p = PATHS[key % PATHS.len()];
    match kind % 6 {
        0 => create(p, &[data], i32::from(data % 4)),
        1 => delete(p, -1),
        2 => set(p, &[data, data], if data.is_multiple_of(3) { 0 } else { -1 }),
        3 => Request::Multi(vec![create(p, b"m", 0), set(p, b"n", -1)]),
        4 => Request::Multi(vec![delete(p, -1), create(p, b"again", 2)]),
        _ => Request::RemoveRecursive(RemoveRecursiveRequest { path: p.into(), limit: 3 }),
    }
}

fn run(flavor: Flavor, reqs: &[(u8, usize, u8)], batches: &[usize]) -> (Vec<Entry>, u64) {
    let mut h = Harness::new(flavor);
    let sessions = [h.session(), h.session()];
    let reqs: Vec<Request> = reqs.iter().map(|&(k, key, d)| request(k, key, d)).collect();
    let mut it = reqs.iter().enumerate().peekable();
    let mut b = batches.iter().cycle();
    while it.peek().is_some() {
        let n = *b.next().unwrap_or(&1);
        let entries: Vec<Entry> = it.by_ref().take(n.max(1)).map(|(i, r)| h.propose(sessions[i % 2], w(r))).collect();
        for e in entries {
            h.commit(e);
        }
    }
    h.close(sessions[0]);
    assert_eq!(h.state.tree().digest(), h.state.tree().recompute_digest());
    assert_eq!(h.replay().expect("replay").tree().digest(), h.state.tree().digest());
    (h.log.iter().map(|e| Entry { time_ms: 0, ..e.clone() }).collect(), h.state.tree().digest())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Proposing k entries before committing them decides exactly what proposing one at a
    /// time does: same txns, zxids and digests, same final tree.
    #[test]
    fn pipelined_proposals_equal_one_at_a_time(
        reqs in proptest::collection::vec((0u8..6, 0usize..6, any::<u8>()), 1..40),
        batches in proptest::collection::vec(1usize..8, 1..6),
        zk in any::<bool>(),
    ) {
        let flavor = if zk { Flavor::Zookeeper } else { Flavor::Keeper };
        let one = run(flavor, &reqs, &[1]);
        let many = run(flavor, &reqs, &batches);
        prop_assert_eq!(one, many);
    }
}

#[test]
fn a_refusal_is_an_error_entry_that_takes_a_zxid_and_changes_nothing() {
    // ZooKeeper's leader turns a request from a moved session into an error txn: it takes a
    // zxid and the tree stays as it was (PrepRequestProcessor, SessionMovedException).
    let mut h = Harness::new(Flavor::Zookeeper);
    let s = h.session();
    let digest = h.state.tree().digest();
    let before = h.state.zxid();
    let e = h.propose(s, Decide::Fail(ZkError::SessionMoved));
    assert_eq!((e.zxid(), e.txn()), (before + 1, &Txn::Failed(ZkError::SessionMoved)));
    assert_eq!(h.commit(e).outcome, Outcome::Failed(ZkError::SessionMoved));
    assert_eq!((h.state.zxid(), h.state.tree().digest()), (before + 1, digest));
    let replayed = h.replay().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replayed.zxid(), h.state.zxid());
}

#[test]
fn a_sync_takes_a_zxid_and_later_replies_do_not_go_back() {
    // testkeeper chaos's session checker found a read after a keeper-flavor sync reporting
    // the zxid before the sync's: the no-op took a zxid but the state did not move to it.
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    let before = h.state.zxid();
    let e = h.propose(s, Decide::Noop);
    assert_eq!(e.zxid(), before + 1);
    h.commit(e);
    assert_eq!(h.state.zxid(), before + 1, "a read after the sync reports the sync's zxid");
    let replayed = h.replay().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replayed.zxid(), before + 1, "replay reaches the same zxid");
}
