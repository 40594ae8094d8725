//! The watch table, modelled on ZooKeeper's two `WatchManager`s: a data table (getData/exists
//! one-shot watches, persistent and persistent-recursive watches) and a child table
//! (getChildren one-shot watches and persistent watches). A change fires the data table, then
//! (on delete) the child table skipping sessions already told, one event per session per
//! trigger. Watches are per server, not replicated state: they live beside the state machine.

use std::collections::{BTreeMap, HashMap};

use testkeeper_wire::records::header::event_type;
use testkeeper_wire::records::watches::watcher_type;

use super::apply::Trigger;
use super::flavor::Rules;
use super::path;

/// Kinds of watch a client can ask for.
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

/// Mode bits of one (session, path) entry in a table.
const STANDARD: u8 = 1;
const PERSISTENT: u8 = 2;
const RECURSIVE: u8 = 4;

type Table = HashMap<String, BTreeMap<i64, u8>>;

/// Every registered watch.
#[derive(Debug, Default, Clone)]
pub struct Watches {
    data: Table,
    child: Table,
    recursive_count: usize,
}

impl Watches {
    fn set(table: &mut Table, p: &str, session: i64, bit: u8, overwrite: bool) {
        let modes = table.entry(p.to_string()).or_default().entry(session).or_default();
        *modes = if overwrite { bit } else { *modes | bit };
    }

    /// Registers a watch. `rules.watch_mode_overwrites` decides whether it replaces the
    /// session's mode on that path (ZooKeeper) or adds to it (Keeper).
    pub fn add(&mut self, kind: WatchKind, p: &str, session: i64, rules: &Rules) {
        let ow = rules.watch_mode_overwrites;
        match kind {
            WatchKind::Data => Self::set(&mut self.data, p, session, STANDARD, ow),
            WatchKind::Child => Self::set(&mut self.child, p, session, STANDARD, ow),
            WatchKind::Persistent => {
                Self::set(&mut self.data, p, session, PERSISTENT, ow);
                Self::set(&mut self.child, p, session, PERSISTENT, ow);
            }
            // ZooKeeper registers a recursive watch in both tables; in the child table it never
            // fires a child event, but it does replace a persistent watch there (measured).
            WatchKind::Recursive => {
                Self::set(&mut self.data, p, session, RECURSIVE, ow);
                Self::set(&mut self.child, p, session, RECURSIVE, ow);
            }
        }
        self.recount();
    }

    fn recount(&mut self) {
        // Any recursive entry, in either table, makes triggers walk the ancestors.
        self.recursive_count = self
            .data
            .values()
            .chain(self.child.values())
            .flat_map(|m| m.values())
            .filter(|m| **m & RECURSIVE != 0)
            .count();
    }

    /// Fires the sessions of `table[p]`: every mode fires on its own path, except that recursive
    /// watches never fire child events; one-shot bits are cleared. Returns the sessions told.
    fn fire_path(table: &mut Table, p: &str, child_event: bool) -> Vec<i64> {
        let Some(entries) = table.get_mut(p) else { return Vec::new() };
        let fires = if child_event { STANDARD | PERSISTENT } else { STANDARD | PERSISTENT | RECURSIVE };
        let told: Vec<i64> = entries.iter().filter(|(_, m)| **m & fires != 0).map(|(s, _)| *s).collect();
        entries.retain(|_, modes| {
            *modes &= !STANDARD;
            *modes != 0
        });
        if entries.is_empty() {
            table.remove(p);
        }
        told
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
                let mut told = self.data_trigger(p, event_type::NODE_DELETED, rules, &mut events);
                // ZooKeeper's child table is walked like the data table for a delete: the
                // node's own child watchers, and recursive entries of its ancestors (a recursive
                // addWatch registers in both tables and survives a later one-shot data watch
                // there; measured on 3.8.0).
                let mut child = Self::fire_path(&mut self.child, p, false);
                child.extend(self.recursive_ancestors(true, p).into_iter().map(|(s, _)| s));
                for s in child {
                    if !told.contains(&s) {
                        told.push(s);
                        events.push(Event { session: s, event_type: event_type::NODE_DELETED, path: p.clone() });
                    }
                }
            }
            Trigger::ChildrenChanged(p) => {
                for s in Self::fire_path(&mut self.child, p, true) {
                    events.push(Event { session: s, event_type: event_type::NODE_CHILDREN_CHANGED, path: p.clone() });
                }
            }
        }
        self.recount();
        events
    }

    /// The data-table half of a trigger: the path's own watchers, then recursive watchers of
    /// its ancestors. Returns the sessions told.
    fn data_trigger(&mut self, p: &str, ty: i32, rules: &Rules, events: &mut Vec<Event>) -> Vec<i64> {
        let mut told = Self::fire_path(&mut self.data, p, false);
        let mut extra = Vec::new();
        for (s, a) in self.recursive_ancestors(false, p) {
            if rules.recursive_event_names_watch_path {
                extra.push(Event { session: s, event_type: ty, path: a });
            } else if !told.contains(&s) {
                told.push(s);
            }
        }
        told.sort_unstable();
        for s in &told {
            events.push(Event { session: *s, event_type: ty, path: p.to_string() });
        }
        events.extend(extra);
        told
    }

    /// Recursive entries of the strict ancestors of `p` in the data table (or the child table),
    /// nearest first, as (session, watched path).
    fn recursive_ancestors(&self, child_table: bool, p: &str) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        if self.recursive_count == 0 {
            return out;
        }
        let table = if child_table { &self.child } else { &self.data };
        let mut cur = path::split(p).map(|(parent, _)| parent);
        while let Some(a) = cur {
            if let Some(entries) = table.get(a) {
                out.extend(entries.iter().filter(|(_, m)| **m & RECURSIVE != 0).map(|(s, _)| (*s, a.to_string())));
            }
            cur = path::split(a).map(|(parent, _)| parent);
        }
        out
    }

    /// Drops every watch of a session (it closed or expired).
    pub fn remove_session(&mut self, session: i64) {
        for table in [&mut self.data, &mut self.child] {
            table.retain(|_, m| {
                m.remove(&session);
                !m.is_empty()
            });
        }
        self.recount();
    }

    /// (table, bits) a `WatcherType` of checkWatches/removeWatches refers to.
    fn selector(wt: i32) -> (bool, bool, u8) {
        match wt {
            watcher_type::CHILDREN => (false, true, STANDARD | PERSISTENT),
            watcher_type::DATA => (true, false, STANDARD | PERSISTENT | RECURSIVE),
            4 => (true, true, PERSISTENT),
            5 => (true, false, RECURSIVE),
            _ => (true, true, STANDARD | PERSISTENT | RECURSIVE),
        }
    }

    /// Whether `session` has a watch of `watcher_type` on `p` (checkWatches).
    pub fn has(&self, session: i64, p: &str, wt: i32) -> bool {
        let (data, child, bits) = Self::selector(wt);
        let hit = |t: &Table| t.get(p).and_then(|m| m.get(&session)).is_some_and(|m| m & bits != 0);
        (data && hit(&self.data)) || (child && hit(&self.child))
    }

    /// Removes `session`'s watches of `watcher_type` on `p`; whether any was removed.
    pub fn remove(&mut self, session: i64, p: &str, wt: i32) -> bool {
        let (data, child, bits) = Self::selector(wt);
        let mut removed = false;
        for (use_it, table) in [(data, &mut self.data), (child, &mut self.child)] {
            if !use_it {
                continue;
            }
            if let Some(m) = table.get_mut(p) {
                if let Some(modes) = m.get_mut(&session) {
                    removed |= *modes & bits != 0;
                    *modes &= !bits;
                    if *modes == 0 {
                        m.remove(&session);
                    }
                }
                if m.is_empty() {
                    table.remove(p);
                }
            }
        }
        self.recount();
        removed
    }

    /// (path, session) pairs of every watch, for wchc/wchp; a path may repeat across tables.
    pub fn entries(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = [&self.data, &self.child]
            .iter()
            .flat_map(|t| t.iter().flat_map(|(p, m)| m.keys().map(|s| (p.clone(), *s))))
            .collect();
        out.sort();
        out
    }

    /// Total number of watches (entries of both tables).
    pub fn count(&self) -> usize {
        self.data.values().chain(self.child.values()).map(BTreeMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn one_shot_fires_once_and_persistent_stays() {
        let mut w = Watches::default();
        w.add(WatchKind::Data, "/a", 1, &zk());
        w.add(WatchKind::Persistent, "/a", 2, &zk());
        assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &zk())), vec![1, 2]);
        assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &zk())), vec![2]);
    }

    #[test]
    fn zookeeper_one_shot_downgrades_persistent_but_keeper_keeps_both() {
        for (rules, after) in [(zk(), vec![]), (keeper(), vec![1])] {
            let mut w = Watches::default();
            w.add(WatchKind::Persistent, "/a", 1, &rules);
            w.add(WatchKind::Data, "/a", 1, &rules);
            assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &rules)), vec![1]);
            assert_eq!(sessions(&w.fire(&Trigger::DataChanged("/a".into()), &rules)), after);
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
}
