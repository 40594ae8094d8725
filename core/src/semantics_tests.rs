//! Exact ZooKeeper/Keeper semantics of prepare + apply, case by case. Each case names what it
//! pins down; flavor differences are checked in both flavors.

use testkeeper_wire::records::data::CheckVersionRequest;
use testkeeper_wire::records::keeper_ext::RemoveRecursiveRequest;
use testkeeper_wire::{Acl, Id, OpCode, Request, ZkError};

use super::apply::{OpResult, Outcome};
use super::flavor::Flavor;
use super::testutil::*;

fn created(o: &Outcome) -> (String, testkeeper_wire::Stat) {
    match o {
        Outcome::Ops(v) => match &v[0] {
            OpResult::Created { path, stat } => (path.clone(), stat.clone()),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

fn failed(o: &Outcome) -> ZkError {
    match o {
        Outcome::Failed(e) => *e,
        other => panic!("expected failure, got {other:?}"),
    }
}

#[test]
fn create_sets_stat_and_parent_and_failed_writes_consume_zxids() {
    for flavor in [Flavor::Zookeeper, Flavor::Keeper] {
        let mut h = Harness::new(flavor);
        let s = h.session();
        let (_, a) = created(&h.write(s, &create("/a", b"x", 0)).outcome);
        assert_eq!(
            (a.czxid, a.mzxid, a.pzxid, a.version, a.cversion, a.data_length),
            (a.czxid, a.czxid, a.czxid, 0, 0, 1)
        );
        assert_eq!(failed(&h.write(s, &create("/a", b"", 0)).outcome), ZkError::NodeExists);
        let (_, b) = created(&h.write(s, &create("/b", b"", 0)).outcome);
        // Measured on ZooKeeper 3.8.0: a failed create between two creates makes czxids differ by 2.
        assert_eq!(b.czxid - a.czxid, 2, "{flavor:?}");
        assert_eq!(failed(&h.write(s, &create("/x/y", b"", 0)).outcome), ZkError::NoNode);
        assert_eq!(failed(&h.write(s, &create("bad", b"", 0)).outcome), ZkError::BadArguments);
        assert_eq!(failed(&h.write(s, &create("/a/", b"", 0)).outcome), ZkError::BadArguments);
    }
}

#[test]
fn sequential_suffix_counts_creates_not_deletes() {
    // Measured on ZooKeeper 3.8.0 (keeper-facts.md): create a, delete a, create -s s- => s-0000000001
    // and cversion 1,2,3; then b, c, delete b, create -s => s-0000000004 with cversion 7.
    for flavor in [Flavor::Zookeeper, Flavor::Keeper] {
        let mut h = Harness::new(flavor);
        let s = h.session();
        h.write(s, &create("/p", b"", 0));
        h.write(s, &create("/p/a", b"", 0));
        h.write(s, &delete("/p/a", -1));
        let (p1, _) = created(&h.write(s, &create("/p/s-", b"", 2)).outcome);
        assert_eq!(p1, "/p/s-0000000001");
        assert_eq!(h.state.stat("/p").cversion, 3);
        h.write(s, &create("/p/b", b"", 0));
        h.write(s, &create("/p/c", b"", 0));
        h.write(s, &delete("/p/b", -1));
        let (p2, _) = created(&h.write(s, &create("/p/s-", b"", 2)).outcome);
        assert_eq!(p2, "/p/s-0000000004");
        assert_eq!(h.state.stat("/p").cversion, 7);
    }
}

#[test]
fn delete_pzxid_and_set_cversion_differ_by_flavor() {
    let mut zk = Harness::new(Flavor::Zookeeper);
    let mut ke = Harness::new(Flavor::Keeper);
    for h in [&mut zk, &mut ke] {
        let s = h.session();
        h.write(s, &create("/p", b"", 0));
        h.write(s, &create("/p/c", b"", 0));
        h.write(s, &set("/p/c", b"v", -1));
        h.write(s, &delete("/p/c", -1));
    }
    let (z, k) = (zk.state.stat("/p"), ke.state.stat("/p"));
    assert_eq!(z.pzxid, zk.state.zxid, "ZooKeeper moves pzxid on child delete");
    assert!(k.pzxid < ke.state.zxid, "Keeper does not");
    assert_eq!(z.cversion, 2);
    assert_eq!(k.cversion, 3, "Keeper also counts the child's setData");
    assert_eq!(zk.state.stat("/").cversion, 0, "ZooKeeper's root starts at -1");
}

#[test]
fn versions_ephemerals_and_errors() {
    let mut h = Harness::new(Flavor::Zookeeper);
    let s = h.session();
    h.write(s, &create("/a", b"", 0));
    assert_eq!(failed(&h.write(s, &set("/a", b"1", 5)).outcome), ZkError::BadVersion);
    h.write(s, &set("/a", b"1", 0));
    assert_eq!(h.state.stat("/a").version, 1);
    assert_eq!(failed(&h.write(s, &delete("/a", 0)).outcome), ZkError::BadVersion);
    h.write(s, &create("/a/b", b"", 0));
    assert_eq!(failed(&h.write(s, &delete("/a", -1)).outcome), ZkError::NotEmpty);
    let (e, st) = created(&h.write(s, &create("/e", b"", 1)).outcome);
    assert_eq!(st.ephemeral_owner, s);
    assert_eq!(failed(&h.write(s, &create(&format!("{e}/c"), b"", 0)).outcome), ZkError::NoChildrenForEphemerals);
    assert_eq!(failed(&h.write(s, &delete("/zookeeper", -1)).outcome), ZkError::BadArguments);
    assert_eq!(failed(&h.write(s, &delete("/nope", -1)).outcome), ZkError::NoNode);
    h.close(s);
    assert!(h.state.tree.get("/e").is_none(), "ephemerals go with their session");
}

#[test]
fn multi_is_all_or_nothing_with_exact_codes() {
    let mut h = Harness::new(Flavor::Zookeeper);
    let s = h.session();
    let before = h.state.tree.digest();
    let multi = Request::Multi(vec![
        create("/m1", b"", 0),
        create("/m1/c", b"", 0),
        create("/m1", b"", 0),
        Request::Check(CheckVersionRequest { path: "/m1".into(), version: 0 }),
    ]);
    match h.write(s, &multi).outcome {
        Outcome::MultiFailed(codes) => assert_eq!(codes, vec![0, 0, -110, -2]),
        other => panic!("{other:?}"),
    }
    assert!(h.state.tree.get("/m1").is_none());
    assert_eq!(h.state.tree.digest(), before, "nothing applied");
    let ok = Request::Multi(vec![create("/m1", b"", 0), create("/m1/s-", b"", 2), create("/m1/s-", b"", 2)]);
    match h.write(s, &ok).outcome {
        Outcome::Ops(r) => assert!(matches!(&r[2], OpResult::Created { path, .. } if path == "/m1/s-0000000001")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn acls_are_enforced() {
    let mut h = Harness::new(Flavor::Zookeeper);
    let s = h.session();
    let user = super::acl::authenticate("digest", b"u:p", None, false).unwrap();
    let locked = Request::Create(testkeeper_wire::CreateOp {
        op: OpCode::Create,
        req: testkeeper_wire::records::create::CreateRequest {
            path: "/l".into(),
            data: None,
            acl: vec![Acl::new(31, "auth", "")],
            flags: 0,
        },
        ttl: 0,
    });
    assert_eq!(failed(&h.write(s, &locked).outcome), ZkError::InvalidAcl);
    h.write_as(s, std::slice::from_ref(&user), &locked);
    assert_eq!(failed(&h.write(s, &set("/l", b"", -1)).outcome), ZkError::NoAuth);
    assert_eq!(failed(&h.write(s, &create("/l/c", b"", 0)).outcome), ZkError::NoAuth);
    h.write_as(s, &[user], &set("/l", b"ok", -1));
    let sup = Id { scheme: "super".into(), id: String::new() };
    h.write_as(s, &[sup], &set("/l", b"super", -1));
    assert_eq!(h.state.stat("/l").version, 2);
}

#[test]
fn keeper_extensions() {
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    h.write(s, &create("/r", b"", 0));
    h.write(s, &create("/r/a", b"", 0));
    h.write(s, &create("/r/a/b", b"", 0));
    let rr = |limit| Request::RemoveRecursive(RemoveRecursiveRequest { path: "/r".into(), limit });
    assert_eq!(failed(&h.write(s, &rr(2)).outcome), ZkError::NotEmpty);
    assert!(matches!(h.write(s, &rr(3)).outcome, Outcome::Ops(_)));
    assert!(h.state.tree.get("/r").is_none());
    let cine = create_op(OpCode::CreateIfNotExists, "/k", 0, 0);
    h.write(s, &cine);
    assert!(matches!(&h.write(s, &cine).outcome, Outcome::Ops(v) if matches!(&v[0], OpResult::Nothing { .. })));
    assert_eq!(failed(&h.write(s, &create("/keeper/x", b"", 0)).outcome), ZkError::BadArguments);
    let ttl = create_op(OpCode::CreateTtl, "/t", 5, 1000);
    h.write(s, &ttl);
    assert_eq!(failed(&h.write(s, &create("/t/c", b"", 0)).outcome), ZkError::BadArguments);
    assert_eq!(failed(&h.write(s, &create_op(OpCode::Create, "/t2", 5, 0)).outcome), ZkError::BadArguments);
}

#[test]
fn replay_reaches_the_same_tree_and_digest() {
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    for i in 0..20 {
        h.write(s, &create(&format!("/n{i}"), b"d", if i % 3 == 0 { 3 } else { 0 }));
    }
    let replayed = h.replay().unwrap();
    assert_eq!(replayed.tree.digest(), h.state.tree.digest());
    assert_eq!(replayed.tree.digest(), replayed.tree.recompute_digest());
    assert_eq!(replayed.zxid, h.state.zxid);
}

#[test]
fn a_tampered_entry_is_fatal_on_replay() {
    let mut h = Harness::new(Flavor::Keeper);
    let s = h.session();
    h.write(s, &create("/a", b"x", 0));
    let last = h.log.pop().unwrap().with_invalid_digest();
    let index = last.index();
    h.log.push(last);
    let err = h.replay().expect_err("a wrong digest must not replay");
    assert_eq!((err.index, err.request.as_str()), (index, "Create"));
    assert!(err.to_string().contains("Keeper will terminate to avoid inconsistencies"), "{err}");
}
