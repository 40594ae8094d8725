//! The per-op table: every operation code (`ZooDefs.OpCode` plus ClickHouse Keeper's
//! extensions) on one line with everything the rest of the code asks of an op: its number and
//! protocol name, its [`Class`] (how the server's dispatch runs it), which [`Servers`] know it
//! (what each flavor accepts), its [`Reply`] body (the layout of its successful reply) and the
//! [`KeeperEvent`] Keeper's `pfev` counts it under.
//!
//! Adding an operation means its record (in `records/`, with its `Request` variant and
//! codec arms in `request.rs`), its op file (the core's `prepare/` for a write, `read.rs` for
//! a read), and one line here; the server's dispatch, its replies, each flavor's op list and
//! the `pfev` counters read the line, and no other list of ops exists.

/// Reserved xid of watch notifications.
pub const WATCH_XID: i32 = -1;
/// Reserved xid of pings (heartbeats).
pub const PING_XID: i32 = -2;
/// Reserved xid of auth packets.
pub const AUTH_XID: i32 = -4;
/// Reserved xid the Java client uses for setWatches on reconnect.
pub const SET_WATCHES_XID: i32 = -8;

/// How the server runs an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Changes the tree: proposed, logged, applied; takes a zxid.
    Write,
    /// A check (version, not-exists, stat): a write in ZooKeeper, answered like a read by a
    /// standalone Keeper (`Rules::standalone_check_is_read`).
    Check,
    /// Answered from the committed tree.
    Read,
    /// About the connection or session, answered by the engine (ping, auth, watches).
    Local,
    /// Never sent by clients (notifications, internal txns).
    Internal,
}

/// Which servers know an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Servers {
    Both,
    /// Apache ZooKeeper only (whoAmI, getEphemerals, getAllChildrenNumber).
    ZooKeeper,
    /// ClickHouse Keeper only (500..507).
    Keeper,
    /// Neither accepts it from a client.
    Neither,
}

/// The layout of an op's successful reply body (`Response`'s variant): the server builds a
/// write's reply by it, and the client decodes every reply by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reply {
    Empty,
    /// The created path (create, createIfNotExists).
    Path,
    /// The created path and its stat (create2, createContainer, createTTL).
    PathStat,
    /// The node's stat (exists, and setData and setACL: the new one).
    Stat,
    /// Data and stat (getData).
    Data,
    /// ACL and stat (getACL).
    Acl,
    /// Child names (getChildren).
    Children,
    /// Child names and the parent's stat (getChildren2, filteredList).
    Children2,
    /// The synced path (sync).
    Synced,
    /// Whole paths (getEphemerals, listRecursive).
    Paths,
    /// One int (getAllChildrenNumber; addWatch's `ErrorResponse`).
    Number,
    /// Names with each child's stat and data (filteredListWithStatsAndData).
    ListWithStatsAndData,
    /// The session's identities (whoAmI).
    WhoAmI,
    /// One result per sub-op (multi, multiRead).
    Multi,
    /// No server answers it with a body of its own (notifications, the handshake, errors).
    Nothing,
}

/// The request counter ClickHouse Keeper's `pfev` counts an op under (its
/// `ProfileEvents::Keeper*Request`, `KeeperProfileEvents.cpp`), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeeperEvent {
    None,
    Create,
    Remove,
    Set,
    Check,
    Multi,
    MultiRead,
    Get,
    List,
    Exists,
}

impl KeeperEvent {
    /// Every counter, in the order `pfev` prints them.
    pub const ALL: [KeeperEvent; 9] = [
        KeeperEvent::Create,
        KeeperEvent::Remove,
        KeeperEvent::Set,
        KeeperEvent::Check,
        KeeperEvent::Multi,
        KeeperEvent::MultiRead,
        KeeperEvent::Get,
        KeeperEvent::List,
        KeeperEvent::Exists,
    ];

    /// The event's name and Keeper's description of it.
    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            KeeperEvent::None => ("", ""),
            KeeperEvent::Create => ("KeeperCreateRequest", "Number of create requests"),
            KeeperEvent::Remove => ("KeeperRemoveRequest", "Number of remove requests"),
            KeeperEvent::Set => ("KeeperSetRequest", "Number of set requests"),
            KeeperEvent::Check => ("KeeperCheckRequest", "Number of check requests"),
            KeeperEvent::Multi => ("KeeperMultiRequest", "Number of multi requests"),
            KeeperEvent::MultiRead => ("KeeperMultiReadRequest", "Number of multi read requests"),
            KeeperEvent::Get => ("KeeperGetRequest", "Number of get requests"),
            KeeperEvent::List => ("KeeperListRequest", "Number of list requests"),
            KeeperEvent::Exists => ("KeeperExistsRequest", "Number of exists requests"),
        }
    }
}

macro_rules! ops {
    ($( $(#[$doc:meta])* $name:ident = $val:literal, $wire_name:literal, $keeper_name:literal, $class:ident, $servers:ident, $reply:ident, $event:ident; )*) => {
        /// An operation code as carried in `RequestHeader.type`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i32)]
        pub enum OpCode {
            $( $(#[$doc])* $name = $val, )*
        }

        impl OpCode {
            /// Every opcode this codec knows.
            pub const ALL: &'static [OpCode] = &[$(OpCode::$name),*];

            /// The protocol's name for the op (`create`, `getData`, `multi`...), as used in fault rules and metrics.
            pub fn name(self) -> &'static str {
                match self { $(OpCode::$name => $wire_name,)* }
            }

            /// The op as ClickHouse Keeper names it in its four-letter words
            /// (`Coordination::opNumToString`: `Create`, `Get`, `SimpleList`...); the protocol
            /// name for ops Keeper does not know.
            pub fn keeper_name(self) -> &'static str {
                match self { $(OpCode::$name => $keeper_name,)* }
            }

            /// Looks an op up by its protocol name.
            pub fn from_name(name: &str) -> Option<OpCode> {
                match name { $($wire_name => Some(OpCode::$name),)* _ => None }
            }

            /// How the server runs it.
            pub fn class(self) -> Class {
                match self { $(OpCode::$name => Class::$class,)* }
            }

            /// Which servers accept it from a client.
            pub fn servers(self) -> Servers {
                match self { $(OpCode::$name => Servers::$servers,)* }
            }

            /// The layout of its successful reply's body.
            pub fn reply(self) -> Reply {
                match self { $(OpCode::$name => Reply::$reply,)* }
            }

            /// The `pfev` counter Keeper counts it under.
            pub fn keeper_event(self) -> KeeperEvent {
                match self { $(OpCode::$name => KeeperEvent::$event,)* }
            }
        }

        impl TryFrom<i32> for OpCode {
            type Error = i32;
            fn try_from(v: i32) -> Result<Self, i32> {
                match v { $($val => Ok(OpCode::$name),)* other => Err(other) }
            }
        }
    };
}

ops! {
    // name = code, wire name, Keeper's name, class, servers, reply, pfev counter;
    /// A watch notification (server to client only).
    Notification = 0, "notification", "notification", Internal, Neither, Nothing, None;
    Create = 1, "create", "Create", Write, Both, Path, Create;
    Delete = 2, "delete", "Remove", Write, Both, Empty, Remove;
    Exists = 3, "exists", "Exists", Read, Both, Stat, Exists;
    GetData = 4, "getData", "Get", Read, Both, Data, Get;
    SetData = 5, "setData", "Set", Write, Both, Stat, Set;
    GetAcl = 6, "getACL", "GetACL", Read, Both, Acl, None;
    SetAcl = 7, "setACL", "SetACL", Write, Both, Stat, None;
    GetChildren = 8, "getChildren", "SimpleList", Read, Both, Children, List;
    Sync = 9, "sync", "Sync", Read, Both, Synced, None;
    Ping = 11, "ping", "Heartbeat", Local, Both, Empty, None;
    GetChildren2 = 12, "getChildren2", "List", Read, Both, Children2, List;
    Check = 13, "check", "Check", Check, Both, Empty, Check;
    Multi = 14, "multi", "Multi", Write, Both, Multi, Multi;
    Create2 = 15, "create2", "Create2", Write, Both, PathStat, Create;
    Reconfig = 16, "reconfig", "Reconfig", Local, Both, Empty, None;
    CheckWatches = 17, "checkWatches", "CheckWatch", Local, Both, Empty, None;
    RemoveWatches = 18, "removeWatches", "RemoveWatch", Local, Both, Empty, None;
    CreateContainer = 19, "createContainer", "createContainer", Write, Both, PathStat, Create;
    /// Internal: the container reaper's delete. Never accepted from clients.
    DeleteContainer = 20, "deleteContainer", "deleteContainer", Internal, Neither, Empty, None;
    CreateTtl = 21, "createTTL", "createTTL", Write, Both, PathStat, Create;
    MultiRead = 22, "multiRead", "MultiRead", Read, Both, Multi, MultiRead;
    Auth = 100, "auth", "Auth", Local, Both, Empty, None;
    SetWatches = 101, "setWatches", "SetWatch", Local, Both, Empty, None;
    Sasl = 102, "sasl", "sasl", Internal, Neither, Empty, None;
    GetEphemerals = 103, "getEphemerals", "getEphemerals", Read, ZooKeeper, Paths, None;
    GetAllChildrenNumber = 104, "getAllChildrenNumber", "getAllChildrenNumber", Read, ZooKeeper, Number, None;
    SetWatches2 = 105, "setWatches2", "SetWatch2", Local, Both, Empty, None;
    AddWatch = 106, "addWatch", "AddWatch", Local, Both, Number, None;
    WhoAmI = 107, "whoAmI", "whoAmI", Read, ZooKeeper, WhoAmI, None;
    /// ClickHouse Keeper: getChildren2 with a persistent/ephemeral filter.
    FilteredList = 500, "filteredList", "FilteredList", Read, Keeper, Children2, List;
    /// ClickHouse Keeper: check that a node does not exist.
    CheckNotExists = 501, "checkNotExists", "CheckNotExists", Check, Keeper, Empty, Check;
    /// ClickHouse Keeper: create that succeeds when the node already exists.
    CreateIfNotExists = 502, "createIfNotExists", "CreateIfNotExists", Write, Keeper, Path, Create;
    /// ClickHouse Keeper: delete a subtree, bounded by a node limit.
    RemoveRecursive = 503, "removeRecursive", "RemoveRecursive", Write, Keeper, Empty, None;
    /// ClickHouse Keeper: check selected stat fields.
    CheckStat = 504, "checkStat", "CheckStat", Check, Keeper, Empty, Check;
    /// ClickHouse Keeper: delete that succeeds when the node is absent.
    TryRemove = 505, "tryRemove", "tryRemove", Write, Keeper, Empty, Remove;
    /// ClickHouse Keeper: filtered list returning each child's stat and data.
    FilteredListWithStatsAndData = 506, "filteredListWithStatsAndData", "filteredListWithStatsAndData", Read, Keeper, ListWithStatsAndData, List;
    /// ClickHouse Keeper: list a whole subtree.
    ListRecursive = 507, "listRecursive", "listRecursive", Read, Keeper, Paths, None;
    CloseSession = -11, "closeSession", "Close", Write, Both, Empty, None;
    CreateSession = -10, "createSession", "SessionID", Internal, Neither, Nothing, None;
    Error = -1, "error", "Error", Internal, Neither, Nothing, None;
}

impl OpCode {
    /// Whether the op can change the tree (a write, or a check, which is one in ZooKeeper).
    pub fn is_write(self) -> bool {
        matches!(self.class(), Class::Write | Class::Check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for &op in OpCode::ALL {
            assert_eq!(OpCode::try_from(op as i32), Ok(op));
            assert_eq!(OpCode::from_name(op.name()), Some(op));
        }
        assert_eq!(OpCode::try_from(10), Err(10));
        assert_eq!(OpCode::MultiRead as i32, 22);
        assert_eq!(OpCode::ListRecursive as i32, 507);
    }

    #[test]
    fn the_table_agrees_with_itself() {
        for &op in OpCode::ALL {
            // Keeper's own ops are its 500 range, and only they.
            assert_eq!(op.servers() == Servers::Keeper, (op as i32) >= 500, "{op:?}");
            // A write answers with a path, a stat, per-op results or nothing; what no server
            // answers is what no client sends (but the reaper's delete, answered to nobody).
            if op.class() == Class::Write {
                assert!(matches!(
                    op.reply(),
                    Reply::Empty | Reply::Path | Reply::PathStat | Reply::Stat | Reply::Multi
                ));
            }
            if op.reply() == Reply::Nothing {
                assert_eq!(op.class(), Class::Internal, "{op:?}");
            }
            // Only what clients send is counted by `pfev`.
            assert!(op.keeper_event() == KeeperEvent::None || op.class() != Class::Internal, "{op:?}");
            // What no client may send is in no server's list.
            assert_eq!(op.class() == Class::Internal, op.servers() == Servers::Neither, "{op:?}");
        }
    }
}
