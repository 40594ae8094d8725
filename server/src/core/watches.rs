//! The watch table: one-shot data/exist and child watches, persistent and persistent-recursive
//! watches, and how a change fires them, following ZooKeeper's `WatchManager` (a data trigger,
//! then a child trigger that skips sessions already told, one event per session per trigger).
//!
//! Watches are per server, not replicated state: they live beside the state machine.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use testkeeper_wire::records::header::event_type;
use testkeeper_wire::records::watches::watcher_type;

use super::apply::Trigger;
use super::flavor::Rules;
use super::path;

/// Kinds of watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WatchKind {
    /// getData/exists: fires once on create, change or delete.
    Data,
    /// getChildren: fires once on a child change or delete.
    Child,
    /// addWatch PERSISTENT: data and child events on one path, until removed.
    Persistent,
    /// addWatch PERSISTENT_RECURSIVE: data events on a path and all below, until removed.
    Recursive,
}

/// A notification for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub session: i64,
    pub event_type: i32,
    pub path: String,
}

type Table = HashMap<String, BTreeSet<i64>>;

/// Every registered watch.
#[derive(Debug, Default, Clone)]
pub struct Watches {
    tables: BTreeMap<WatchKind, Table>,
}

const KINDS: [WatchKind; 4] = [WatchKind::Data, WatchKind::Child, WatchKind::Persistent, WatchKind::Recursive];

impl Watches {
    fn table(&mut self, kind: WatchKind) -> &mut Table {
        self.tables.entry(kind).or_default()
    }

    fn get(&self, kind: WatchKind, p: &str) -> Option<&BTreeSet<i64>> {
        self.tables.get(&kind).and_then(|t| t.get(p))
    }

    /// Registers a watch (idempotent).
    pub fn add(&mut self, kind: WatchKind, p: &str, session: i64) {
        self.table(kind).entry(p.to_string()).or_default().insert(session);
    }

    fn take(&mut self, kind: WatchKind, p: &str) -> BTreeSet<i64> {
        self.table(kind).remove(p).unwrap_or_default()
    }

    fn persistent(&self, p: &str) -> BTreeSet<i64> {
        self.get(WatchKind::Persistent, p).cloned().unwrap_or_default()
    }

    /// Recursive watchers of `p` or an ancestor, as (session, watched path).
    fn recursive(&self, p: &str) -> Vec<(i64, String)> {
        let Some(table) = self.tables.get(&WatchKind::Recursive).filter(|t| !t.is_empty()) else { return Vec::new() };
        let mut out = Vec::new();
        let mut cur = Some(p);
        while let Some(c) = cur {
            if let Some(set) = table.get(c) {
                out.extend(set.iter().map(|s| (*s, c.to_string())));
            }
            cur = path::split(c).map(|(parent, _)| parent);
        }
        out
    }

    /// Fires the watches `trigger` matches, removing the one-shot ones, and returns the events
    /// in delivery order.
    pub fn fire(&mut self, trigger: &Trigger, rules: &Rules) -> Vec<Event> {
        let mut events = Vec::new();
        match trigger {
            Trigger::Created(p) => {
                self.data_trigger(p, event_type::NODE_CREATED, rules, &mut events);
            }
            Trigger::DataChanged(p) => {
                self.data_trigger(p, event_type::NODE_DATA_CHANGED, rules, &mut events);
            }
            Trigger::Deleted(p) => {
                let told = self.data_trigger(p, event_type::NODE_DELETED, rules, &mut events);
                let mut child = self.take(WatchKind::Child, p);
                child.extend(self.persistent(p));
                for s in child.difference(&told) {
                    events.push(Event { session: *s, event_type: event_type::NODE_DELETED, path: p.clone() });
                }
            }
            Trigger::ChildrenChanged(p) => {
                let mut child = self.take(WatchKind::Child, p);
                child.extend(self.persistent(p));
                for s in child {
                    events.push(Event { session: s, event_type: event_type::NODE_CHILDREN_CHANGED, path: p.clone() });
                }
            }
        }
        events
    }

    /// The data-watch half of a trigger; returns the sessions told.
    fn data_trigger(&mut self, p: &str, ty: i32, rules: &Rules, events: &mut Vec<Event>) -> BTreeSet<i64> {
        let mut told = self.take(WatchKind::Data, p);
        told.extend(self.persistent(p));
        let mut extra = Vec::new();
        for (s, watched) in self.recursive(p) {
            if rules.recursive_event_names_watch_path && watched != p {
                extra.push(Event { session: s, event_type: ty, path: watched });
            } else {
                told.insert(s);
            }
        }
        for s in &told {
            events.push(Event { session: *s, event_type: ty, path: p.to_string() });
        }
        extra.dedup();
        events.extend(extra);
        told
    }

    /// Drops every watch of a session (it closed or expired).
    pub fn remove_session(&mut self, session: i64) {
        for table in self.tables.values_mut() {
            table.retain(|_, set| {
                set.remove(&session);
                !set.is_empty()
            });
        }
    }

    fn kinds_for(wt: i32) -> &'static [WatchKind] {
        match wt {
            watcher_type::CHILDREN => &[WatchKind::Child],
            watcher_type::DATA => &[WatchKind::Data],
            4 => &[WatchKind::Persistent],
            5 => &[WatchKind::Recursive],
            _ => &KINDS,
        }
    }

    /// Whether `session` has a watch of `watcher_type` on `p` (checkWatches).
    pub fn has(&self, session: i64, p: &str, wt: i32) -> bool {
        Self::kinds_for(wt).iter().any(|k| self.get(*k, p).is_some_and(|s| s.contains(&session)))
    }

    /// Removes `session`'s watches of `watcher_type` on `p`; whether any was removed.
    pub fn remove(&mut self, session: i64, p: &str, wt: i32) -> bool {
        let mut removed = false;
        for k in Self::kinds_for(wt) {
            if let Some(set) = self.table(*k).get_mut(p) {
                removed |= set.remove(&session);
                if set.is_empty() {
                    self.table(*k).remove(p);
                }
            }
        }
        removed
    }

    /// (path, session) pairs of every watch, for wchc/wchp; a path may repeat across kinds.
    pub fn entries(&self) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        for table in self.tables.values() {
            for (p, set) in table {
                out.extend(set.iter().map(|s| (p.clone(), *s)));
            }
        }
        out.sort();
        out
    }

    /// Total number of watches.
    pub fn count(&self) -> usize {
        self.tables.values().flat_map(|t| t.values()).map(BTreeSet::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flavor::Flavor;

    fn zk() -> Rules {
        Rules::new(Flavor::Zookeeper, 0)
    }

    #[test]
    fn one_shot_fires_once_and_persistent_stays() {
        let mut w = Watches::default();
        w.add(WatchKind::Data, "/a", 1);
        w.add(WatchKind::Persistent, "/a", 2);
        let e = w.fire(&Trigger::DataChanged("/a".into()), &zk());
        assert_eq!(e.iter().map(|e| e.session).collect::<Vec<_>>(), vec![1, 2]);
        let e = w.fire(&Trigger::DataChanged("/a".into()), &zk());
        assert_eq!(e.iter().map(|e| e.session).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn delete_tells_each_session_once() {
        let mut w = Watches::default();
        w.add(WatchKind::Data, "/a", 1);
        w.add(WatchKind::Child, "/a", 1);
        w.add(WatchKind::Child, "/a", 3);
        let e = w.fire(&Trigger::Deleted("/a".into()), &zk());
        assert_eq!(e.len(), 2);
        assert!(e.iter().all(|e| e.event_type == event_type::NODE_DELETED));
    }

    #[test]
    fn recursive_sees_descendants_but_not_child_events() {
        let mut w = Watches::default();
        w.add(WatchKind::Recursive, "/a", 7);
        assert_eq!(w.fire(&Trigger::Created("/a/b/c".into()), &zk()).len(), 1);
        assert_eq!(w.fire(&Trigger::ChildrenChanged("/a/b".into()), &zk()).len(), 0);
        let keeper = Rules::new(Flavor::Keeper, 0);
        let e = w.fire(&Trigger::Created("/a/b/c".into()), &keeper);
        assert_eq!(e[0].path, "/a");
    }
}
