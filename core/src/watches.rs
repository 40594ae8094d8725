//! The watch table, modelled on ZooKeeper's two `WatchManager`s: a data table (getData/exists
//! one-shot watches, persistent and persistent-recursive watches) and a child table
//! (getChildren one-shot watches and persistent watches). A change fires the data table, then
//! (on delete) the child table skipping sessions already told, one event per session per
//! trigger. Watches are per server, not replicated state: they live beside the state machine.
//!
//! Each table keeps its counts and a session → paths index up to date as it changes
//! (`table.rs`), so an add, a fire, a removal and a session's end cost what they touch.

mod table;
#[cfg(test)]
mod tests;

use std::collections::HashSet;

use testkeeper_wire::records::header::event_type;
use testkeeper_wire::records::watches::watcher_type;

use super::apply::Trigger;
use super::flavor::Rules;
use super::path;
use table::{Table, PERSISTENT, RECURSIVE, STANDARD};

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

/// Every registered watch.
#[derive(Debug, Default, Clone)]
pub struct Watches {
    data: Table,
    child: Table,
}

impl Watches {
    /// Registers a watch. `rules.watch_mode_overwrites` decides whether it replaces the
    /// session's mode on that path (ZooKeeper) or adds to it (Keeper).
    pub fn add(&mut self, kind: WatchKind, p: &str, session: i64, rules: &Rules) {
        let ow = rules.watch_mode_overwrites;
        match kind {
            WatchKind::Data => self.data.set(p, session, STANDARD, ow),
            WatchKind::Child => self.child.set(p, session, STANDARD, ow),
            WatchKind::Persistent => {
                self.data.set(p, session, PERSISTENT, ow);
                self.child.set(p, session, PERSISTENT, ow);
            }
            // ZooKeeper registers a recursive watch in both tables; in the child table it never
            // fires a child event, but it does replace a persistent watch there (measured).
            // Keeper keeps recursive watches in a table of their own.
            WatchKind::Recursive => {
                self.data.set(p, session, RECURSIVE, ow);
                if rules.recursive_watch_in_child_table {
                    self.child.set(p, session, RECURSIVE, ow);
                }
            }
        }
    }

    /// Fires the watches `trigger` matches, removing the one-shot ones, and returns the events
    /// in delivery order.
    pub fn fire(&mut self, trigger: &Trigger, rules: &Rules) -> Vec<Event> {
        let mut events = Vec::new();
        if self.count() == 0 {
            return events;
        }
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
                // there; measured on 3.8.0). Keeper's child table holds no recursive entries.
                let mut child = self.child.fire(p, STANDARD | PERSISTENT | RECURSIVE);
                child.extend(self.recursive_ancestors(&self.child, p).into_iter().map(|(s, _)| s));
                for s in child {
                    if told.insert(s) {
                        events.push(Event { session: s, event_type: event_type::NODE_DELETED, path: p.clone() });
                    }
                }
            }
            Trigger::ChildrenChanged(p) => {
                // Recursive watches never fire child events.
                for s in self.child.fire(p, STANDARD | PERSISTENT) {
                    events.push(Event { session: s, event_type: event_type::NODE_CHILDREN_CHANGED, path: p.clone() });
                }
            }
        }
        events
    }

    /// The data-table half of a trigger: the path's own watchers, then recursive watchers of
    /// its ancestors. Keeper tells each recursive watcher once per watched ancestor, naming
    /// the ancestor (`KeeperStorage::processWatchesImpl`); ZooKeeper tells each session once,
    /// naming the changed node. Returns the sessions told about `p` itself.
    fn data_trigger(&mut self, p: &str, ty: i32, rules: &Rules, events: &mut Vec<Event>) -> HashSet<i64> {
        let own = self.data.fire(p, STANDARD | PERSISTENT | RECURSIVE);
        let mut told: HashSet<i64> = own.iter().copied().collect();
        let mut sessions = own;
        let mut extra = Vec::new();
        for (s, a) in self.recursive_ancestors(&self.data, p) {
            if rules.recursive_event_names_watch_path {
                extra.push(Event { session: s, event_type: ty, path: a.to_string() });
            } else if told.insert(s) {
                sessions.push(s);
            }
        }
        sessions.sort_unstable();
        for s in sessions {
            events.push(Event { session: s, event_type: ty, path: p.to_string() });
        }
        events.extend(extra);
        told
    }

    /// Recursive entries of the strict ancestors of `p` in `table`, nearest first, as
    /// (session, watched path). Costs the depth of `p` when any recursive watch exists.
    fn recursive_ancestors<'p>(&self, table: &Table, p: &'p str) -> Vec<(i64, &'p str)> {
        let mut out = Vec::new();
        if !table.has_recursive() {
            return out;
        }
        let mut cur = path::split(p).map(|(parent, _)| parent);
        while let Some(a) = cur {
            out.extend(table.recursive_at(a).map(|s| (s, a)));
            cur = path::split(a).map(|(parent, _)| parent);
        }
        out
    }

    /// Drops every watch of a session (it closed or expired). Costs the session's own watches.
    pub fn remove_session(&mut self, session: i64) {
        self.data.remove_session(session);
        self.child.remove_session(session);
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
        (data && self.data.modes(p, session) & bits != 0) || (child && self.child.modes(p, session) & bits != 0)
    }

    /// Whether any session has a watch of `watcher_type` on `p` (ZooKeeper's checkWatches).
    pub fn has_any(&self, p: &str, wt: i32) -> bool {
        let (data, child, bits) = Self::selector(wt);
        (data && self.data.any_modes(p) & bits != 0) || (child && self.child.any_modes(p) & bits != 0)
    }

    /// Removes `session`'s watches of `watcher_type` on `p`; whether any was removed.
    pub fn remove(&mut self, session: i64, p: &str, wt: i32) -> bool {
        let (data, child, bits) = Self::selector(wt);
        let mut removed = false;
        if data {
            removed |= self.data.clear(p, session, bits) & bits != 0;
        }
        if child {
            removed |= self.child.clear(p, session, bits) & bits != 0;
        }
        removed
    }

    /// (path, session) pairs of every watch, for wchc/wchp; a path may repeat across tables.
    pub fn entries(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> =
            self.data.entries().chain(self.child.entries()).map(|(p, s)| (p.to_string(), s)).collect();
        out.sort();
        out
    }

    /// (path, session) pairs of the data table alone, sorted: what ZooKeeper's `wchc`, `wchp`
    /// and `wchs` dump (`DataTree.dumpWatches` reads `dataWatches` only; measured).
    pub fn data_entries(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = self.data.entries().map(|(p, s)| (p.to_string(), s)).collect();
        out.sort();
        out
    }

    /// Total number of watches (entries of both tables).
    pub fn count(&self) -> usize {
        self.data.len() + self.child.len()
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        self.data.check_invariants();
        self.child.check_invariants();
    }
}
