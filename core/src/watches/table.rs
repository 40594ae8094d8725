//! One watch table (ZooKeeper has a data and a child table) with its bookkeeping kept as it
//! changes, as ZooKeeper's `WatchManager` keeps `watchTable` and `watch2Paths`: a path →
//! sessions map, a session → paths reverse index, the number of (path, session) entries and
//! the number of those with a recursive mode. Every operation costs what it touches: an add
//! or removal one entry, firing a path its watchers, dropping a session its own paths; nothing
//! scans the table.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};

// foldhash, not std's SipHash: these tables are hit several times per request (std's hasher
// was about 4% of the server's instructions); its per-process random seed still keeps
// client-chosen paths from being aimed at one bucket.
use foldhash::fast::RandomState;
use std::sync::Arc;

/// Mode bits of one (session, path) entry.
pub(super) const STANDARD: u8 = 1;
pub(super) const PERSISTENT: u8 = 2;
pub(super) const RECURSIVE: u8 = 4;

/// Sessions watching one path, with their mode bits. Ordered by session so that events of one
/// trigger go out in a stable order.
type Watchers = BTreeMap<i64, u8>;

#[derive(Debug, Default, Clone)]
pub(super) struct Table {
    /// path → watchers. The path string is shared with `by_session`.
    by_path: HashMap<Arc<str>, Watchers, RandomState>,
    /// session → the paths it has an entry on: what `remove_session` walks.
    by_session: HashMap<i64, HashSet<Arc<str>, RandomState>, RandomState>,
    /// Number of (path, session) entries.
    len: usize,
    /// Entries with the RECURSIVE bit: when 0, a trigger need not walk the ancestors.
    recursive: usize,
}

impl Table {
    /// Number of (path, session) entries.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether any entry has a recursive mode.
    pub(super) fn has_recursive(&self) -> bool {
        self.recursive > 0
    }

    /// The mode bits of `session` on `p` (0 when none).
    pub(super) fn modes(&self, p: &str, session: i64) -> u8 {
        self.by_path.get(p).and_then(|w| w.get(&session)).copied().unwrap_or(0)
    }

    /// The union of every session's mode bits on `p` (0 when nobody watches it).
    pub(super) fn any_modes(&self, p: &str) -> u8 {
        self.by_path.get(p).map_or(0, |w| w.values().fold(0, |acc, m| acc | m))
    }

    /// Sessions with a recursive entry on `p`, in session order.
    pub(super) fn recursive_at(&self, p: &str) -> impl Iterator<Item = i64> + '_ {
        self.by_path.get(p).into_iter().flat_map(|w| w.iter().filter(|(_, m)| **m & RECURSIVE != 0).map(|(s, _)| *s))
    }

    /// Sets `bit` for `session` on `p`: replacing its modes there (`overwrite`) or adding to them.
    pub(super) fn set(&mut self, p: &str, session: i64, bit: u8, overwrite: bool) {
        let watchers = match self.by_path.get_mut(p) {
            Some(w) => w,
            None => self.by_path.entry(Arc::from(p)).or_default(),
        };
        let old = watchers.get(&session).copied().unwrap_or(0);
        let new = if overwrite { bit } else { old | bit };
        watchers.insert(session, new);
        if old == 0 {
            self.len += 1;
            // Share the key the path map already holds.
            let key = self.by_path.get_key_value(p).map(|(k, _)| k.clone()).expect("just inserted");
            self.by_session.entry(session).or_default().insert(key);
        }
        self.recount_one(old, new);
    }

    /// Clears `bits` of `session` on `p`; returns the bits it had before.
    pub(super) fn clear(&mut self, p: &str, session: i64, bits: u8) -> u8 {
        let Some(watchers) = self.by_path.get_mut(p) else { return 0 };
        let Some(modes) = watchers.get_mut(&session) else { return 0 };
        let old = *modes;
        let new = old & !bits;
        *modes = new;
        if new == 0 {
            watchers.remove(&session);
            let empty = watchers.is_empty();
            self.forget(p, session, empty);
        }
        self.recount_one(old, new);
        old
    }

    /// Fires `p`: returns the sessions whose modes intersect `fires` (in session order) and
    /// clears every one-shot (STANDARD) bit there, dropping entries left without a mode.
    pub(super) fn fire(&mut self, p: &str, fires: u8) -> Vec<i64> {
        let Some(watchers) = self.by_path.get_mut(p) else { return Vec::new() };
        let told: Vec<i64> = watchers.iter().filter(|(_, m)| **m & fires != 0).map(|(s, _)| *s).collect();
        let mut gone = Vec::new();
        watchers.retain(|s, modes| {
            *modes &= !STANDARD;
            if *modes == 0 {
                gone.push(*s);
            }
            *modes != 0
        });
        // Clearing STANDARD never touches a recursive bit, so only `len` and the index move.
        let empty = watchers.is_empty();
        self.len -= gone.len();
        for s in gone {
            self.unindex(p, s);
        }
        if empty {
            self.by_path.remove(p);
        }
        told
    }

    /// Drops every entry of `session`.
    pub(super) fn remove_session(&mut self, session: i64) {
        let Some(paths) = self.by_session.remove(&session) else { return };
        for p in paths {
            let Entry::Occupied(mut e) = self.by_path.entry(p) else { continue };
            if let Some(old) = e.get_mut().remove(&session) {
                self.len -= 1;
                if old & RECURSIVE != 0 {
                    self.recursive -= 1;
                }
            }
            if e.get().is_empty() {
                e.remove();
            }
        }
    }

    /// Every (path, session) entry, unordered.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        self.by_path.iter().flat_map(|(p, w)| w.keys().map(move |s| (&**p, *s)))
    }

    /// Removes `session`'s index entry for `p`, and `p` itself when no watcher is left.
    fn forget(&mut self, p: &str, session: i64, path_empty: bool) {
        self.len -= 1;
        self.unindex(p, session);
        if path_empty {
            self.by_path.remove(p);
        }
    }

    fn unindex(&mut self, p: &str, session: i64) {
        if let Entry::Occupied(mut e) = self.by_session.entry(session) {
            e.get_mut().remove(p);
            if e.get().is_empty() {
                e.remove();
            }
        }
    }

    fn recount_one(&mut self, old: u8, new: u8) {
        match (old & RECURSIVE != 0, new & RECURSIVE != 0) {
            (false, true) => self.recursive += 1,
            (true, false) => self.recursive -= 1,
            _ => {}
        }
    }

    /// Recomputes every count from scratch and compares: the invariant the unit tests check.
    #[cfg(test)]
    pub(super) fn check_invariants(&self) {
        let len: usize = self.by_path.values().map(BTreeMap::len).sum();
        let recursive = self.by_path.values().flat_map(|w| w.values()).filter(|m| **m & RECURSIVE != 0).count();
        assert_eq!(self.len, len, "entry count");
        assert_eq!(self.recursive, recursive, "recursive count");
        assert!(self.by_path.values().all(|w| !w.is_empty() && w.values().all(|m| *m != 0)), "empty entries kept");
        let indexed: usize = self.by_session.values().map(HashSet::len).sum();
        assert_eq!(indexed, len, "reverse index size");
        for (s, paths) in &self.by_session {
            assert!(!paths.is_empty(), "empty session set kept");
            for p in paths {
                assert!(self.modes(p, *s) != 0, "index names {p} for {s} but the table does not");
            }
        }
    }
}
