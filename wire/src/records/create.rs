//! Create requests and responses: create, create2, createContainer, createTTL.

use super::acl::Acl;
use super::stat::Stat;

record! {
    /// Body of create (1), create2 (15), createContainer (19) and Keeper's createIfNotExists (502).
    pub struct CreateRequest {
        path: String [str],
        data: Option<Vec<u8>> [obuf],
        acl: Vec<Acl> [vec],
        flags: i32 [i32],
    }
}

record! {
    /// Body of createTTL (21).
    pub struct CreateTtlRequest {
        path: String [str],
        data: Option<Vec<u8>> [obuf],
        acl: Vec<Acl> [vec],
        flags: i32 [i32],
        ttl: i64 [i64],
    }
}

record! {
    /// Reply to create: the path actually created (with any sequential suffix).
    pub struct CreateResponse {
        path: String [str],
    }
}

record! {
    /// Reply to create2, createContainer and createTTL.
    pub struct Create2Response {
        path: String [str],
        stat: Stat [rec],
    }
}

/// `CreateMode` flag values.
pub mod create_mode {
    pub const PERSISTENT: i32 = 0;
    pub const EPHEMERAL: i32 = 1;
    pub const PERSISTENT_SEQUENTIAL: i32 = 2;
    pub const EPHEMERAL_SEQUENTIAL: i32 = 3;
    pub const CONTAINER: i32 = 4;
    pub const PERSISTENT_WITH_TTL: i32 = 5;
    pub const PERSISTENT_SEQUENTIAL_WITH_TTL: i32 = 6;
}

/// A decoded `CreateMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateMode {
    pub ephemeral: bool,
    pub sequential: bool,
    pub container: bool,
    pub ttl: bool,
}

impl CreateMode {
    /// Decodes the flags field; unknown values are `None` (the server answers BADARGUMENTS).
    pub fn from_flags(flags: i32) -> Option<CreateMode> {
        let m = |ephemeral, sequential, container, ttl| Some(CreateMode { ephemeral, sequential, container, ttl });
        match flags {
            create_mode::PERSISTENT => m(false, false, false, false),
            create_mode::EPHEMERAL => m(true, false, false, false),
            create_mode::PERSISTENT_SEQUENTIAL => m(false, true, false, false),
            create_mode::EPHEMERAL_SEQUENTIAL => m(true, true, false, false),
            create_mode::CONTAINER => m(false, false, true, false),
            create_mode::PERSISTENT_WITH_TTL => m(false, false, false, true),
            create_mode::PERSISTENT_SEQUENTIAL_WITH_TTL => m(false, true, false, true),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn create_records_round_trip() {
        check_round_trip(&CreateRequest { path: "/a".into(), data: Some(b"x".to_vec()), acl: Acl::open(), flags: 3 });
        check_round_trip(&CreateTtlRequest {
            path: "/t".into(),
            data: Some(vec![]),
            acl: Acl::open(),
            flags: 5,
            ttl: 1000,
        });
        check_round_trip(&CreateResponse { path: "/a0000000001".into() });
        check_round_trip(&Create2Response { path: "/a".into(), stat: Stat { czxid: 3, ..Default::default() } });
        assert_eq!(CreateMode::from_flags(3).map(|m| (m.ephemeral, m.sequential)), Some((true, true)));
        assert_eq!(CreateMode::from_flags(7), None);
    }
}
