//! Property: after any sequence of creates, sets, deletes, multis, ACL changes, sequential
//! nodes and expiring sessions, the incremental digest equals a full recompute, and replaying
//! the log on a fresh state reaches the same digest (each entry verified on the way).

use proptest::prelude::*;
use testkeeper_wire::records::acl::SetAclRequest;
use testkeeper_wire::{Acl, OpCode, Request};

use super::flavor::Flavor;
use super::testutil::*;

#[derive(Debug, Clone)]
enum Step {
    Create(usize, i32, u8),
    Container(usize),
    Ttl(usize),
    Set(usize, u8),
    Delete(usize),
    SetAcl(usize),
    Multi(Vec<(usize, u8)>),
    NewSession,
    Expire(usize),
}

const PATHS: [&str; 8] = ["/a", "/b", "/a/x", "/a/y", "/b/z", "/a/x/q", "/c", "/c/d"];

fn step() -> impl Strategy<Value = Step> {
    let p = 0..PATHS.len();
    prop_oneof![
        4 => (p.clone(), 0..4i32, any::<u8>()).prop_map(|(i, f, d)| Step::Create(i, f, d)),
        1 => p.clone().prop_map(Step::Container),
        1 => p.clone().prop_map(Step::Ttl),
        3 => (p.clone(), any::<u8>()).prop_map(|(i, d)| Step::Set(i, d)),
        2 => p.clone().prop_map(Step::Delete),
        1 => p.clone().prop_map(Step::SetAcl),
        2 => proptest::collection::vec((p.clone(), any::<u8>()), 1..4).prop_map(Step::Multi),
        1 => Just(Step::NewSession),
        1 => (0..4usize).prop_map(Step::Expire),
    ]
}

fn run(flavor: Flavor, steps: &[Step]) {
    let mut h = Harness::new(flavor);
    let mut sessions = vec![h.session()];
    for st in steps {
        let s = *sessions.last().expect("one session");
        let req =
            match st {
                Step::Create(i, f, d) => create(PATHS[*i], &[*d], *f),
                Step::Container(i) => create_op(OpCode::CreateContainer, PATHS[*i], 4, 0),
                Step::Ttl(i) => create_op(OpCode::CreateTtl, PATHS[*i], 5, 60_000),
                Step::Set(i, d) => set(PATHS[*i], &[*d; 3], -1),
                Step::Delete(i) => delete(PATHS[*i], -1),
                Step::SetAcl(i) => {
                    Request::SetAcl(SetAclRequest { path: PATHS[*i].into(), acl: Acl::read_only(), version: -1 })
                }
                Step::Multi(ops) => Request::Multi(
                    ops.iter()
                        .map(|(i, d)| {
                            if d % 2 == 0 {
                                create(PATHS[*i], &[*d], i32::from(d % 4))
                            } else {
                                delete(PATHS[*i], -1)
                            }
                        })
                        .collect(),
                ),
                Step::NewSession => {
                    sessions.push(h.session());
                    continue;
                }
                Step::Expire(k) => {
                    if sessions.len() > 1 {
                        let id = sessions.remove(k % sessions.len());
                        h.close(id);
                    }
                    continue;
                }
            };
        h.write(s, &req);
        assert_eq!(h.state.tree.digest(), h.state.tree.recompute_digest(), "after {st:?}");
        let t = &h.state.tree;
        assert_eq!(t.approximate_data_size(), t.recompute_data_size(), "data size after {st:?}");
    }
    let replayed = h.replay().unwrap();
    assert_eq!(replayed.tree.digest(), h.state.tree.digest());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn incremental_digest_matches_recompute_keeper(steps in proptest::collection::vec(step(), 1..60)) {
        run(Flavor::Keeper, &steps);
    }

    #[test]
    fn incremental_digest_matches_recompute_zookeeper(steps in proptest::collection::vec(step(), 1..60)) {
        run(Flavor::Zookeeper, &steps);
    }
}
