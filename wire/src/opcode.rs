//! Operation codes (`ZooDefs.OpCode` plus ClickHouse Keeper's extensions) and reserved xids.

/// Reserved xid of watch notifications.
pub const WATCH_XID: i32 = -1;
/// Reserved xid of pings (heartbeats).
pub const PING_XID: i32 = -2;
/// Reserved xid of auth packets.
pub const AUTH_XID: i32 = -4;
/// Reserved xid the Java client uses for setWatches on reconnect.
pub const SET_WATCHES_XID: i32 = -8;

macro_rules! opcodes {
    ($( $(#[$doc:meta])* $name:ident = $val:literal => $wire_name:literal ),* $(,)?) => {
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

            /// Looks an op up by its protocol name.
            pub fn from_name(name: &str) -> Option<OpCode> {
                match name { $($wire_name => Some(OpCode::$name),)* _ => None }
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

opcodes! {
    /// A watch notification (server to client only).
    Notification = 0 => "notification",
    Create = 1 => "create",
    Delete = 2 => "delete",
    Exists = 3 => "exists",
    GetData = 4 => "getData",
    SetData = 5 => "setData",
    GetAcl = 6 => "getACL",
    SetAcl = 7 => "setACL",
    GetChildren = 8 => "getChildren",
    Sync = 9 => "sync",
    Ping = 11 => "ping",
    GetChildren2 = 12 => "getChildren2",
    Check = 13 => "check",
    Multi = 14 => "multi",
    Create2 = 15 => "create2",
    Reconfig = 16 => "reconfig",
    CheckWatches = 17 => "checkWatches",
    RemoveWatches = 18 => "removeWatches",
    CreateContainer = 19 => "createContainer",
    /// Internal: the container reaper's delete. Never accepted from clients.
    DeleteContainer = 20 => "deleteContainer",
    CreateTtl = 21 => "createTTL",
    MultiRead = 22 => "multiRead",
    Auth = 100 => "auth",
    SetWatches = 101 => "setWatches",
    Sasl = 102 => "sasl",
    GetEphemerals = 103 => "getEphemerals",
    GetAllChildrenNumber = 104 => "getAllChildrenNumber",
    SetWatches2 = 105 => "setWatches2",
    AddWatch = 106 => "addWatch",
    WhoAmI = 107 => "whoAmI",
    /// ClickHouse Keeper: getChildren2 with a persistent/ephemeral filter.
    FilteredList = 500 => "filteredList",
    /// ClickHouse Keeper: check that a node does not exist.
    CheckNotExists = 501 => "checkNotExists",
    /// ClickHouse Keeper: create that succeeds when the node already exists.
    CreateIfNotExists = 502 => "createIfNotExists",
    /// ClickHouse Keeper: delete a subtree, bounded by a node limit.
    RemoveRecursive = 503 => "removeRecursive",
    /// ClickHouse Keeper: check selected stat fields.
    CheckStat = 504 => "checkStat",
    /// ClickHouse Keeper: delete that succeeds when the node is absent.
    TryRemove = 505 => "tryRemove",
    /// ClickHouse Keeper: filtered list returning each child's stat and data.
    FilteredListWithStatsAndData = 506 => "filteredListWithStatsAndData",
    /// ClickHouse Keeper: list a whole subtree.
    ListRecursive = 507 => "listRecursive",
    CloseSession = -11 => "closeSession",
    CreateSession = -10 => "createSession",
    Error = -1 => "error",
}

impl OpCode {
    /// Whether the op changes the tree (and so goes through prepare/apply and consumes a zxid).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            OpCode::Create
                | OpCode::Delete
                | OpCode::SetData
                | OpCode::SetAcl
                | OpCode::Check
                | OpCode::Multi
                | OpCode::Create2
                | OpCode::CreateContainer
                | OpCode::DeleteContainer
                | OpCode::CreateTtl
                | OpCode::Reconfig
                | OpCode::CheckNotExists
                | OpCode::CreateIfNotExists
                | OpCode::RemoveRecursive
                | OpCode::CheckStat
                | OpCode::TryRemove
                | OpCode::CloseSession
                | OpCode::CreateSession
        )
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
}
