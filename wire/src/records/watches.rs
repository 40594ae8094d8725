//! Watch management: setWatches, setWatches2, addWatch, checkWatches, removeWatches.

record! {
    /// Body of setWatches (101): watches to re-register after a reconnect.
    pub struct SetWatches {
        relative_zxid: i64 [i64],
        data_watches: Vec<String> [vec],
        exist_watches: Vec<String> [vec],
        child_watches: Vec<String> [vec],
    }
}
record! {
    /// Body of setWatches2 (105): adds persistent and persistent-recursive watches.
    pub struct SetWatches2 {
        relative_zxid: i64 [i64],
        data_watches: Vec<String> [vec],
        exist_watches: Vec<String> [vec],
        child_watches: Vec<String> [vec],
        persistent_watches: Vec<String> [vec],
        persistent_recursive_watches: Vec<String> [vec],
    }
}
record! {
    /// Body of addWatch (106); `mode` is 0 persistent, 1 persistent-recursive.
    pub struct AddWatchRequest { path: String [str], mode: i32 [i32] }
}
record! {
    /// Body of checkWatches (17) and removeWatches (18); `watcher_type` 1 children, 2 data, 3 any.
    pub struct WatchesRequest { path: String [str], watcher_type: i32 [i32] }
}

/// `AddWatchMode` values.
pub mod add_watch_mode {
    pub const PERSISTENT: i32 = 0;
    pub const PERSISTENT_RECURSIVE: i32 = 1;
}

/// `WatcherType` values of checkWatches/removeWatches.
pub mod watcher_type {
    pub const CHILDREN: i32 = 1;
    pub const DATA: i32 = 2;
    pub const ANY: i32 = 3;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn watch_records_round_trip() {
        check_round_trip(&SetWatches {
            relative_zxid: 9,
            data_watches: vec!["/a".into()],
            exist_watches: vec![],
            child_watches: vec!["/".into()],
        });
        check_round_trip(&SetWatches2 {
            relative_zxid: 1,
            persistent_recursive_watches: vec!["/r".into()],
            ..Default::default()
        });
        check_round_trip(&AddWatchRequest { path: "/a".into(), mode: 1 });
        check_round_trip(&WatchesRequest { path: "/a".into(), watcher_type: 3 });
    }
}
