//! Unit tests of the watch table: firing semantics per flavor, and a property that the kept
//! counts and session index always equal a recount after any sequence of changes.

use proptest::prelude::*;

use super::*;
use crate::flavor::Flavor;

fn zk() -> Rules {
    Rules::new(Flavor::Zookeeper, 0)
}

fn keeper() -> Rules {
    Rules::new(Flavor::Keeper, 0)
}

fn sessions(e: &[Event]) -> Vec<i64> {
    e.iter().map(|e| e.session).collect()
}

fn paths(e: &[Event]) -> Vec<&str> {
    e.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn one_shot_fires_once_and_persistent_stays() {
    let mut w = Watches::default();
    w.add(WatchKind::Data, "/a", 1, &zk());
    w.add(WatchKind::Persistent, "/a", 2, &zk());
    assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &zk())), vec![1, 2]);
    assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &zk())), vec![2]);
    w.check_invariants();
}

#[test]
fn zookeeper_one_shot_downgrades_persistent_but_keeper_keeps_both() {
    for (rules, after) in [(zk(), vec![]), (keeper(), vec![1])] {
        let mut w = Watches::default();
        w.add(WatchKind::Persistent, "/a", 1, &rules);
        w.add(WatchKind::Data, "/a", 1, &rules);
        assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &rules)), vec![1]);
        assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &rules)), after);
        w.check_invariants();
    }
}

#[test]
fn delete_tells_each_session_once() {
    let mut w = Watches::default();
    w.add(WatchKind::Data, "/a", 1, &zk());
    w.add(WatchKind::Child, "/a", 1, &zk());
    w.add(WatchKind::Child, "/a", 3, &zk());
    let e = w.fire(&Trigger::Deleted("/a".into()), &zk());
    assert_eq!(sessions(&e), vec![1, 3]);
    assert!(e.iter().all(|e| e.event_type == event_type::NODE_DELETED));
    assert_eq!(w.count(), 0);
    w.check_invariants();
}

#[test]
fn recursive_sees_descendants_but_not_child_events() {
    let mut w = Watches::default();
    w.add(WatchKind::Recursive, "/a", 7, &zk());
    assert_eq!(w.fire(&Trigger::Created("/a/b/c".into()), &zk()).len(), 1);
    assert_eq!(w.fire(&Trigger::ChildrenChanged("/a/b".into()), &zk()).len(), 0);
    let e = w.fire(&Trigger::Created("/a/b/c".into()), &keeper());
    assert_eq!(e[0].path, "/a");
}

/// The issue-16 case: deleting `R/a/b` under a recursive watch on `R`. ZooKeeper tells the
/// session once, naming the node; Keeper once per watched ancestor, naming the ancestor
/// (`KeeperStorage::processWatchesImpl`), where this used to send a second event.
#[test]
fn delete_below_a_recursive_watch_is_one_event_in_each_flavor() {
    for (rules, want) in [(zk(), "/r/a/b"), (keeper(), "/r")] {
        let mut w = Watches::default();
        w.add(WatchKind::Recursive, "/r", 1, &rules);
        let e = w.fire(&Trigger::Deleted("/r/a/b".into()), &rules);
        assert_eq!(paths(&e), vec![want], "{:?}", rules.flavor);
        assert_eq!(e[0].event_type, event_type::NODE_DELETED);
        w.check_invariants();
    }
}

#[test]
fn keeper_tells_each_watched_ancestor_nearest_first() {
    let mut w = Watches::default();
    w.add(WatchKind::Recursive, "/r", 1, &keeper());
    w.add(WatchKind::Recursive, "/r/a", 1, &keeper());
    w.add(WatchKind::Recursive, "/r/a", 2, &keeper());
    let e = w.fire(&Trigger::Deleted("/r/a/b".into()), &keeper());
    let got: Vec<(i64, &str)> = e.iter().map(|e| (e.session, e.path.as_str())).collect();
    assert_eq!(got, vec![(1, "/r/a"), (2, "/r/a"), (1, "/r")]);
    // ZooKeeper: each session once, naming the deleted node.
    let mut w = Watches::default();
    w.add(WatchKind::Recursive, "/r", 1, &zk());
    w.add(WatchKind::Recursive, "/r/a", 1, &zk());
    w.add(WatchKind::Recursive, "/r/a", 2, &zk());
    let e = w.fire(&Trigger::Deleted("/r/a/b".into()), &zk());
    let got: Vec<(i64, &str)> = e.iter().map(|e| (e.session, e.path.as_str())).collect();
    assert_eq!(got, vec![(1, "/r/a/b"), (2, "/r/a/b")]);
}

#[test]
fn recursive_counts_once_in_keeper_and_twice_in_zookeeper() {
    for (rules, n) in [(zk(), 2), (keeper(), 1)] {
        let mut w = Watches::default();
        w.add(WatchKind::Recursive, "/r", 1, &rules);
        assert_eq!(w.count(), n);
        assert!(w.remove(1, "/r", watcher_type::ANY));
        assert_eq!(w.count(), 0);
        w.check_invariants();
    }
}

#[test]
fn removing_a_session_drops_only_its_watches() {
    let mut w = Watches::default();
    for i in 0..1000 {
        let p = format!("/n{i}");
        w.add(WatchKind::Data, &p, 1, &zk());
        w.add(WatchKind::Child, &p, 1, &zk());
        w.add(WatchKind::Data, &p, 2, &zk());
    }
    w.add(WatchKind::Recursive, "/", 1, &zk());
    assert_eq!(w.count(), 3002);
    w.remove_session(1);
    w.check_invariants();
    assert_eq!(w.count(), 1000);
    assert!(w.entries().iter().all(|(_, s)| *s == 2));
    // No recursive watch is left, so nothing fires for session 1 below the root.
    assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/n5".into()), &zk())), vec![2]);
    w.remove_session(1);
    w.remove_session(99);
    w.check_invariants();
}

#[test]
fn check_and_remove_watches_follow_the_watcher_type() {
    let mut w = Watches::default();
    w.add(WatchKind::Data, "/a", 1, &zk());
    w.add(WatchKind::Child, "/a", 1, &zk());
    assert!(w.has(1, "/a", watcher_type::CHILDREN));
    assert!(w.remove(1, "/a", watcher_type::CHILDREN));
    assert!(!w.has(1, "/a", watcher_type::CHILDREN));
    assert!(!w.remove(1, "/a", watcher_type::CHILDREN), "already gone");
    assert!(w.has(1, "/a", watcher_type::DATA));
    assert!(!w.remove(2, "/a", watcher_type::ANY), "another session's");
    assert!(w.remove(1, "/a", watcher_type::ANY));
    assert_eq!(w.count(), 0);
    w.check_invariants();
}

#[derive(Debug, Clone)]
enum Step {
    Add(WatchKind, usize, i64),
    Fire(u8, usize),
    Remove(usize, i64, i32),
    EndSession(i64),
}

const PATHS: [&str; 6] = ["/", "/a", "/a/b", "/a/b/c", "/d", "/d/e"];

fn step() -> impl Strategy<Value = Step> {
    let p = 0..PATHS.len();
    let kind = prop_oneof![
        Just(WatchKind::Data),
        Just(WatchKind::Child),
        Just(WatchKind::Persistent),
        Just(WatchKind::Recursive)
    ];
    prop_oneof![
        5 => (kind, p.clone(), 1..5i64).prop_map(|(k, i, s)| Step::Add(k, i, s)),
        3 => (0..4u8, p.clone()).prop_map(|(t, i)| Step::Fire(t, i)),
        2 => (p, 1..5i64, 1..6i32).prop_map(|(i, s, wt)| Step::Remove(i, s, wt)),
        1 => (1..5i64).prop_map(Step::EndSession),
    ]
}

proptest! {
    /// After any sequence of adds, triggers, removals and session ends, in either flavor, the
    /// counts and the session index kept along the way equal a recount, and an ended session
    /// has nothing left.
    #[test]
    fn kept_counts_equal_a_recount(steps in proptest::collection::vec(step(), 1..60), keeper_flavor: bool) {
        let rules = if keeper_flavor { keeper() } else { zk() };
        let mut w = Watches::default();
        for s in steps {
            match s {
                Step::Add(k, i, sess) => w.add(k, PATHS[i], sess, &rules),
                Step::Fire(t, i) => {
                    let p = PATHS[i].to_string();
                    let trig = match t {
                        0 => Trigger::Created(p),
                        1 => Trigger::DataChanged(p),
                        2 => Trigger::Deleted(p),
                        _ => Trigger::ChildrenChanged(p),
                    };
                    let events = w.fire(&trig, &rules);
                    // One event per session and trigger, except Keeper's per-ancestor events.
                    if !keeper_flavor {
                        let mut s = sessions(&events);
                        s.sort_unstable();
                        s.dedup();
                        prop_assert_eq!(s.len(), events.len());
                    }
                }
                Step::Remove(i, sess, wt) => {
                    let had = w.has(sess, PATHS[i], wt);
                    prop_assert_eq!(w.remove(sess, PATHS[i], wt), had);
                    prop_assert!(!w.has(sess, PATHS[i], wt));
                }
                Step::EndSession(sess) => {
                    w.remove_session(sess);
                    prop_assert!(w.entries().iter().all(|(_, s)| *s != sess));
                }
            }
            w.check_invariants();
            prop_assert_eq!(w.count(), w.entries().len());
        }
    }
}
