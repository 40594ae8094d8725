//! Unit tests of the tree: lookups, the digest kept in step, child indexes and interned ACLs.

use std::sync::Arc;

use testkeeper_wire::Acl;

use super::*;
use crate::apply::test_witness as w;

fn open() -> AclList {
    Arc::new(Acl::open())
}

fn tree() -> Tree {
    Tree::new(true, &open())
}

fn add(t: &mut Tree, path: &str) {
    t.insert(&w(), path, node(Some(b""), &open(), 0));
}

/// A persistent node with `data` and `ttl`.
fn node<'a>(data: Option<&'a [u8]>, acl: &'a AclList, ttl: i64) -> NewNode<'a> {
    NewNode { data, acl, stat: NodeStat::default(), owner: 0, ttl }
}

#[test]
fn incremental_digest_equals_recompute() {
    let mut t = tree();
    t.insert_uncounted(
        &w(),
        "/zookeeper",
        NewNode { data: Some(b""), acl: &open(), stat: NodeStat::default(), owner: 0, ttl: 0 },
    );
    let acl = open();
    t.insert(&w(), "/a", node(Some(b"x"), &acl, 0));
    t.insert(&w(), "/t", node(None, &acl, 5000));
    t.modify(&w(), "/a", |n| n.stat.version += 1);
    t.modify(&w(), "/a", |n| n.set_data(Some(b"longer data")));
    assert_eq!(t.digest(), t.recompute_digest());
    assert_eq!(t.ttl_of("/t"), 5000);
    t.remove(&w(), "/a");
    t.remove(&w(), "/t");
    assert_eq!(t.digest(), t.recompute_digest());
    assert_eq!((t.len(), t.ttl_of("/t")), (2, 0));
}

#[test]
#[should_panic(expected = "invariant")]
fn deleting_a_parent_with_children_panics() {
    let mut t = tree();
    add(&mut t, "/a");
    add(&mut t, "/a/b");
    t.remove(&w(), "/a");
}

#[test]
fn children_resolve_by_exact_name_and_list_in_str_order() {
    let mut t = tree();
    add(&mut t, "/p");
    let long = "x".repeat(40);
    let names = ["n2", "n10", "é", long.as_str(), "n1", "N1"];
    for n in names {
        add(&mut t, &format!("/p/{n}"));
    }
    // Enough children to make the table grow (and rehash through the arena) several times.
    for i in 0..500 {
        add(&mut t, &format!("/p/g{i}"));
    }
    for n in names {
        assert_eq!(t.get(&format!("/p/{n}")).map(|c| c.name().to_string()).as_deref(), Some(n));
    }
    assert!(t.get("/p/n").is_none() && t.get("/p/").is_none() && t.get("p/n1").is_none());
    let p = t.get("/p").unwrap();
    let listed: Vec<&str> = p.children().into_iter().map(|c| c.node.name()).collect();
    let mut want: Vec<String> = names.iter().map(|s| s.to_string()).chain((0..500).map(|i| format!("g{i}"))).collect();
    want.sort_unstable();
    assert_eq!(listed, want);
    assert_eq!(p.children_unordered().count(), 506);
    for i in 0..500 {
        t.remove(&w(), &format!("/p/g{i}"));
    }
    assert_eq!(t.get("/p").unwrap().num_children(), 6);
    assert!(t.get("/p/g7").is_none());
    assert_eq!(t.digest(), t.recompute_digest());
}

#[test]
fn a_reused_slot_starts_with_a_fresh_sequential_counter() {
    let mut t = tree();
    add(&mut t, "/a");
    add(&mut t, "/a/x");
    t.remove(&w(), "/a/x");
    assert_eq!(t.get("/a").unwrap().seq(), 1);
    t.remove(&w(), "/a");
    add(&mut t, "/b");
    add(&mut t, "/b2");
    for p in ["/b", "/b2"] {
        assert_eq!(t.get(p).unwrap().seq(), 0, "{p} took a freed slot");
    }
    assert_eq!(t.kids.len(), 1, "only the root has a child index");
    assert_eq!(t.digest(), t.recompute_digest());
}

#[test]
fn equal_acls_share_one_copy_until_the_last_user_goes() {
    let mut t = tree();
    add(&mut t, "/a");
    add(&mut t, "/b");
    assert_eq!(t.get("/a").unwrap().acl, t.get("/b").unwrap().acl);
    let read_only: AclList = Arc::new(Acl::read_only());
    t.set_acl(&w(), "/a", &read_only);
    assert_eq!(**t.get("/a").unwrap().acl(), *read_only);
    assert_eq!(t.acls.len(), 2);
    t.remove(&w(), "/a");
    assert_eq!(t.acls.len(), 1, "the read-only list left with /a");
    assert_eq!(t.digest(), t.recompute_digest());
}
