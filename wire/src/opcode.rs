//! The per-op table: every operation code (`ZooDefs.OpCode` plus ClickHouse Keeper's
//! extensions) on one line with everything the rest of the code asks of an op: its number and
//! protocol name, its [`Class`] (how the server's dispatch runs it), which [`Servers`] know it
//! (what each flavor accepts) and its [`Reply`] body (what a successful write answers).
//!
//! Adding an operation means its record (in `records/`, with its `Request` variant and
//! codec arms in `request.rs`), its op file (the core's `prepare/` for a write, `read.rs` for
//! a read), and one line here; the server's dispatch, its replies and each flavor's op list
//! read the line, and no other list of ops exists.

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

/// The body a successful write answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reply {
    Empty,
    /// The created path (create, createIfNotExists).
    Path,
    /// The created path and its stat (create2, createContainer, createTTL).
    PathStat,
    /// The node's new stat (setData, setACL).
    Stat,
}

macro_rules! ops {
    ($( $(#[$doc:meta])* $name:ident = $val:literal, $wire_name:literal, $keeper_name:literal, $class:ident, $servers:ident, $reply:ident; )*) => {
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

            /// The body of a successful write's reply.
            pub fn reply(self) -> Reply {
                match self { $(OpCode::$name => Reply::$reply,)* }
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
    // name = code, wire name, Keeper's name, class, servers, reply;
    /// A watch notification (server to client only).
    Notification = 0, "notification", "notification", Internal, Neither, Empty;
    Create = 1, "create", "Create", Write, Both, Path;
    Delete = 2, "delete", "Remove", Write, Both, Empty;
    Exists = 3, "exists", "Exists", Read, Both, Empty;
    GetData = 4, "getData", "Get", Read, Both, Empty;
    SetData = 5, "setData", "Set", Write, Both, Stat;
    GetAcl = 6, "getACL", "GetACL", Read, Both, Empty;
    SetAcl = 7, "setACL", "SetACL", Write, Both, Stat;
    GetChildren = 8, "getChildren", "SimpleList", Read, Both, Empty;
    Sync = 9, "sync", "Sync", Read, Both, Empty;
    Ping = 11, "ping", "Heartbeat", Local, Both, Empty;
    GetChildren2 = 12, "getChildren2", "List", Read, Both, Empty;
    Check = 13, "check", "Check", Check, Both, Empty;
    Multi = 14, "multi", "Multi", Write, Both, Empty;
    Create2 = 15, "create2", "Create2", Write, Both, PathStat;
    Reconfig = 16, "reconfig", "Reconfig", Local, Both, Empty;
    CheckWatches = 17, "checkWatches", "CheckWatch", Local, Both, Empty;
    RemoveWatches = 18, "removeWatches", "RemoveWatch", Local, Both, Empty;
    CreateContainer = 19, "createContainer", "createContainer", Write, Both, PathStat;
    /// Internal: the container reaper's delete. Never accepted from clients.
    DeleteContainer = 20, "deleteContainer", "deleteContainer", Internal, Neither, Empty;
    CreateTtl = 21, "createTTL", "createTTL", Write, Both, PathStat;
    MultiRead = 22, "multiRead", "MultiRead", Read, Both, Empty;
    Auth = 100, "auth", "Auth", Local, Both, Empty;
    SetWatches = 101, "setWatches", "SetWatch", Local, Both, Empty;
    Sasl = 102, "sasl", "sasl", Internal, Neither, Empty;
    GetEphemerals = 103, "getEphemerals", "getEphemerals", Read, ZooKeeper, Empty;
    GetAllChildrenNumber = 104, "getAllChildrenNumber", "getAllChildrenNumber", Read, ZooKeeper, Empty;
    SetWatches2 = 105, "setWatches2", "SetWatch2", Local, Both, Empty;
    AddWatch = 106, "addWatch", "AddWatch", Local, Both, Empty;
    WhoAmI = 107, "whoAmI", "whoAmI", Read, ZooKeeper, Empty;
    /// ClickHouse Keeper: getChildren2 with a persistent/ephemeral filter.
    FilteredList = 500, "filteredList", "FilteredList", Read, Keeper, Empty;
    /// ClickHouse Keeper: check that a node does not exist.
    CheckNotExists = 501, "checkNotExists", "CheckNotExists", Check, Keeper, Empty;
    /// ClickHouse Keeper: create that succeeds when the node already exists.
    CreateIfNotExists = 502, "createIfNotExists", "CreateIfNotExists", Write, Keeper, Path;
    /// ClickHouse Keeper: delete a subtree, bounded by a node limit.
    RemoveRecursive = 503, "removeRecursive", "RemoveRecursive", Write, Keeper, Empty;
    /// ClickHouse Keeper: check selected stat fields.
    CheckStat = 504, "checkStat", "CheckStat", Check, Keeper, Empty;
    /// ClickHouse Keeper: delete that succeeds when the node is absent.
    TryRemove = 505, "tryRemove", "tryRemove", Write, Keeper, Empty;
    /// ClickHouse Keeper: filtered list returning each child's stat and data.
    FilteredListWithStatsAndData = 506, "filteredListWithStatsAndData", "filteredListWithStatsAndData", Read, Keeper, Empty;
    /// ClickHouse Keeper: list a whole subtree.
    ListRecursive = 507, "listRecursive", "listRecursive", Read, Keeper, Empty;
    CloseSession = -11, "closeSession", "Close", Write, Both, Empty;
    CreateSession = -10, "createSession", "SessionID", Internal, Neither, Empty;
    Error = -1, "error", "Error", Internal, Neither, Empty;
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
            // Only writes answer with a body of their own.
            assert!(op.reply() == Reply::Empty || op.class() == Class::Write, "{op:?}");
            // What no client may send is in no server's list.
            assert_eq!(op.class() == Class::Internal, op.servers() == Servers::Neither, "{op:?}");
        }
    }
}
