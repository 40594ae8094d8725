//! The ACL a create or setACL carries, in the scenario files' text form: a name for the common
//! ones (`open`, `read-only`, `creator`, `world:nobody`, `none`) or a comma list of
//! `SCHEME:ID:PERMS` entries with ZooKeeper CLI permission letters (`cdrwa`), where
//! `digest-of:USER:PASSWORD:PERMS` stands for the `digest` entry of that credential (so files
//! never carry hashes).

use std::fmt;

use base64::Engine as _;
use sha1::{Digest, Sha1};
use testkeeper_wire::{perms, Acl};

/// Which ACL a create or setACL carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclSpec {
    /// `world:anyone` all permissions.
    Open,
    /// `world:anyone` read only.
    ReadOnly,
    /// `auth:` all permissions: the creator's authenticated ids (INVALIDACL without any).
    Creator,
    /// `world:nobody`: a world id other than `anyone` is invalid in both servers.
    BadWorld,
    /// An empty list (INVALIDACL).
    Empty,
    /// Explicit entries, kept as written (checked by [`AclSpec::parse`]).
    Entries(String),
}

impl AclSpec {
    /// Reads the text form.
    ///
    /// # Errors
    /// An entry without scheme, id and permissions, or an unknown permission letter.
    pub fn parse(s: &str) -> Result<AclSpec, crate::parse::SyntaxError> {
        Ok(match s {
            "open" => AclSpec::Open,
            "read-only" => AclSpec::ReadOnly,
            "creator" => AclSpec::Creator,
            "world:nobody" => AclSpec::BadWorld,
            "none" => AclSpec::Empty,
            other => {
                entries(other).map_err(|what| crate::parse::SyntaxError { at: None, what })?;
                AclSpec::Entries(other.to_string())
            }
        })
    }

    pub fn is_open(&self) -> bool {
        *self == AclSpec::Open
    }

    /// The wire ACL.
    pub fn acl(&self) -> Vec<Acl> {
        match self {
            AclSpec::Open => Acl::open(),
            AclSpec::ReadOnly => Acl::read_only(),
            AclSpec::Creator => vec![Acl::new(perms::ALL, "auth", "")],
            AclSpec::BadWorld => vec![Acl::new(perms::ALL, "world", "nobody")],
            AclSpec::Empty => Vec::new(),
            AclSpec::Entries(text) => entries(text).unwrap_or_default(),
        }
    }
}

impl fmt::Display for AclSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AclSpec::Open => "open",
            AclSpec::ReadOnly => "read-only",
            AclSpec::Creator => "creator",
            AclSpec::BadWorld => "world:nobody",
            AclSpec::Empty => "none",
            AclSpec::Entries(text) => text,
        })
    }
}

/// `digest` id of a `user:password` credential: `user:base64(sha1(user:password))`, as
/// ZooKeeper's `DigestAuthenticationProvider.generateDigest` computes it.
pub fn digest_id(user: &str, password: &str) -> String {
    let hash = Sha1::digest(format!("{user}:{password}").as_bytes());
    format!("{user}:{}", base64::engine::general_purpose::STANDARD.encode(hash))
}

fn entries(text: &str) -> Result<Vec<Acl>, String> {
    text.split(',').map(entry).collect()
}

fn entry(e: &str) -> Result<Acl, String> {
    let bad = || format!("ACL entry '{e}' is not SCHEME:ID:PERMS");
    let (scheme, rest) = e.split_once(':').ok_or_else(bad)?;
    let (id, letters) = rest.rsplit_once(':').ok_or_else(bad)?;
    let mut bits = 0;
    for c in letters.chars() {
        bits |= match c {
            'r' => perms::READ,
            'w' => perms::WRITE,
            'c' => perms::CREATE,
            'd' => perms::DELETE,
            'a' => perms::ADMIN,
            other => return Err(format!("ACL entry '{e}': unknown permission '{other}' (use cdrwa)")),
        };
    }
    Ok(match scheme {
        "digest-of" => {
            let (user, password) = id.split_once(':').ok_or_else(bad)?;
            Acl::new(bits, "digest", &digest_id(user, password))
        }
        _ => Acl::new(bits, scheme, id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_entries() {
        assert_eq!(AclSpec::parse("open").unwrap().acl(), Acl::open());
        assert_eq!(AclSpec::parse("none").unwrap().acl(), vec![]);
        let spec = AclSpec::parse("world:anyone:r,ip:127.0.0.1:cdrwa").unwrap();
        assert_eq!(spec.to_string(), "world:anyone:r,ip:127.0.0.1:cdrwa");
        assert_eq!(spec.acl(), vec![Acl::new(perms::READ, "world", "anyone"), Acl::new(31, "ip", "127.0.0.1")]);
        // The hash ZooKeeper's docs give for super:secret... here user:secret, checked by shape.
        let d = AclSpec::parse("digest-of:user:secret:rw").unwrap().acl();
        assert!(d[0].id.id.starts_with("user:") && d[0].id.id.len() == 5 + 28 && d[0].perms == 3, "{d:?}");
        assert!(AclSpec::parse("world:anyone:x").is_err() && AclSpec::parse("nocolon").is_err());
    }
}
