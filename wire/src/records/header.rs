//! Request and reply headers, and the watch notification body.

record! {
    /// Precedes every client request body.
    pub struct RequestHeader {
        xid: i32 [i32],
        op: i32 [i32],
    }
}

record! {
    /// Precedes every server reply; `err` is 0 or a `ZkError` code.
    pub struct ReplyHeader {
        xid: i32 [i32],
        zxid: i64 [i64],
        err: i32 [i32],
    }
}

record! {
    /// The body of a watch notification (xid -1).
    pub struct WatcherEvent {
        event_type: i32 [i32],
        state: i32 [i32],
        path: String [str],
    }
}

/// `Watcher.Event.EventType` codes.
pub mod event_type {
    pub const NONE: i32 = -1;
    pub const NODE_CREATED: i32 = 1;
    pub const NODE_DELETED: i32 = 2;
    pub const NODE_DATA_CHANGED: i32 = 3;
    pub const NODE_CHILDREN_CHANGED: i32 = 4;
    pub const DATA_WATCH_REMOVED: i32 = 5;
    pub const CHILD_WATCH_REMOVED: i32 = 6;
    pub const PERSISTENT_WATCH_REMOVED: i32 = 7;
}

/// `Watcher.Event.KeeperState` codes.
pub mod keeper_state {
    pub const DISCONNECTED: i32 = 0;
    pub const SYNC_CONNECTED: i32 = 3;
    pub const AUTH_FAILED: i32 = 4;
    pub const CONNECTED_READ_ONLY: i32 = 5;
    pub const EXPIRED: i32 = -112;
    pub const CLOSED: i32 = 7;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn headers_round_trip() {
        check_round_trip(&RequestHeader { xid: 7, op: 4 });
        check_round_trip(&ReplyHeader { xid: -1, zxid: -1, err: 0 });
        check_round_trip(&WatcherEvent { event_type: 3, state: 3, path: "/a".into() });
    }
}
