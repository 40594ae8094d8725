//! `Id` and `ACL`, plus the permission bits of `ZooDefs.Perms`.

record! {
    /// An identity: `world:anyone`, `digest:user:base64(sha1)`, `auth:`, `ip:...`, `super:`.
    pub struct Id {
        scheme: String [str],
        id: String [str],
    }
}

record! {
    /// One ACL entry: permission bits granted to an identity.
    pub struct Acl {
        perms: i32 [i32],
        id: Id [rec],
    }
}

/// `ZooDefs.Perms` bits.
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

impl Acl {
    /// `world:anyone` with every permission (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    pub fn open() -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "world", "anyone")]
    }

    /// `world:anyone` read-only (`ZooDefs.Ids.READ_ACL_UNSAFE`).
    pub fn read_only() -> Vec<Acl> {
        vec![Acl::new(perms::READ, "world", "anyone")]
    }

    /// Builds an entry.
    pub fn new(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl { perms, id: Id { scheme: scheme.into(), id: id.into() } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn acl_round_trips() {
        check_round_trip(&Acl::new(perms::ALL, "digest", "u:abc="));
        check_round_trip(&Id { scheme: "world".into(), id: "anyone".into() });
    }
}

record! {
    /// Body of getACL (6).
    pub struct GetAclRequest { path: String [str] }
}
record! {
    /// Reply to getACL.
    pub struct GetAclResponse { acl: Vec<Acl> [vec], stat: super::stat::Stat [rec] }
}
record! {
    /// Body of setACL (7).
    pub struct SetAclRequest { path: String [str], acl: Vec<Acl> [vec], version: i32 [i32] }
}

#[cfg(test)]
mod op_tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn acl_ops_round_trip() {
        check_round_trip(&GetAclRequest { path: "/a".into() });
        check_round_trip(&GetAclResponse { acl: Acl::open(), stat: Default::default() });
        check_round_trip(&SetAclRequest { path: "/a".into(), acl: Acl::read_only(), version: -1 });
    }
}
