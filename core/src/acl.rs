//! ACL checks and fix-up, as ZooKeeper's `checkACL` and `fixupACL`, with the world, auth and
//! digest schemes (the ones ClickHouse Keeper supports) plus a configurable super digest.

use base64::Engine as _;
use sha1::{Digest, Sha1};
use testkeeper_wire::{Acl, Id, ZkError};

/// One identity a session has authenticated as (`scheme`, `id`), e.g. ("digest", "u:hash").
pub type AuthId = Id;

/// `digest` scheme id for a `user:password` credential: `user:base64(sha1(user:password))`,
/// the user being what precedes the first colon. `zookeeper`: a credential without a colon is
/// a user of that name (`DigestAuthenticationProvider.generateDigest` splits at most once and
/// hashes the whole), as is the part before the first of several; otherwise (Keeper's auth
/// processor) anything but exactly one colon is refused.
pub fn digest_id(credential: &str, zookeeper: bool) -> Option<String> {
    let user = match credential.split_once(':') {
        Some((user, rest)) if zookeeper || !rest.contains(':') => user,
        None if zookeeper => credential,
        _ => return None,
    };
    let hash = Sha1::digest(credential.as_bytes());
    Some(format!("{user}:{}", base64::engine::general_purpose::STANDARD.encode(hash)))
}

/// Turns an auth packet into the identity it grants. `super_digest` is `super:<base64sha1>`;
/// `zookeeper` reads credentials as ZooKeeper does (see [`digest_id`]).
///
/// # Errors
/// AUTHFAILED for an unsupported scheme or a malformed credential.
pub fn authenticate(scheme: &str, auth: &[u8], super_digest: Option<&str>, zookeeper: bool) -> Result<AuthId, ZkError> {
    match scheme {
        "digest" => {
            let cred = std::str::from_utf8(auth).map_err(|_| ZkError::AuthFailed)?;
            let id = digest_id(cred, zookeeper).ok_or(ZkError::AuthFailed)?;
            if super_digest == Some(id.as_str()) {
                return Ok(Id { scheme: "super".into(), id: String::new() });
            }
            Ok(Id { scheme: "digest".into(), id })
        }
        _ => Err(ZkError::AuthFailed),
    }
}

/// Whether `auth` may perform an operation needing `perm` on a node with `acl`.
pub fn allowed(acl: &[Acl], auth: &[AuthId], perm: i32) -> bool {
    if acl.is_empty() || auth.iter().any(|a| a.scheme == "super") {
        return true;
    }
    acl.iter().any(|entry| {
        entry.perms & perm != 0
            && match entry.id.scheme.as_str() {
                "world" => entry.id.id == "anyone",
                "ip" => auth.iter().any(|a| a.scheme == "ip" && ip_matches(&a.id, &entry.id.id)),
                scheme => auth.iter().any(|a| a.scheme == scheme && a.id == entry.id.id),
            }
    })
}

/// Checks `perm`, mapping a refusal to NOAUTH.
///
/// # Errors
/// NOAUTH when no entry grants `perm`.
pub fn check(acl: &[Acl], auth: &[AuthId], perm: i32) -> Result<(), ZkError> {
    if allowed(acl, auth, perm) {
        Ok(())
    } else {
        Err(ZkError::NoAuth)
    }
}

/// Validates an ACL from a create or setACL and expands `auth` entries into the session's
/// identities, as ZooKeeper's `fixupACL`.
///
/// # Errors
/// INVALIDACL for an empty list, an unknown scheme (`ip` only where `allow_ip`: Keeper has no ip scheme), a malformed id, or an `auth` entry on a
/// session with no identity.
pub fn fixup(acl: &[Acl], auth: &[AuthId], allow_ip: bool) -> Result<Vec<Acl>, ZkError> {
    if acl.is_empty() {
        return Err(ZkError::InvalidAcl);
    }
    let mut out: Vec<Acl> = Vec::with_capacity(acl.len());
    let mut push = |a: Acl| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    for entry in acl {
        match entry.id.scheme.as_str() {
            "world" => {
                if entry.id.id != "anyone" {
                    return Err(ZkError::InvalidAcl);
                }
                push(entry.clone());
            }
            "auth" => {
                let mut any = false;
                for a in auth.iter().filter(|a| a.scheme != "super" && a.scheme != "ip") {
                    any = true;
                    push(Acl { perms: entry.perms, id: a.clone() });
                }
                if !any {
                    return Err(ZkError::InvalidAcl);
                }
            }
            "digest" => {
                if entry.id.id.split(':').count() != 2 {
                    return Err(ZkError::InvalidAcl);
                }
                push(entry.clone());
            }
            "ip" if allow_ip && is_ip_id(&entry.id.id) => push(entry.clone()),
            _ => return Err(ZkError::InvalidAcl),
        }
    }
    Ok(out)
}

/// An `ip` ACL id: an address, optionally `/bits` no longer than the address.
fn is_ip_id(id: &str) -> bool {
    ip_network(id).is_some()
}

/// `addr[/bits]` as the address's bytes and the prefix length.
fn ip_network(id: &str) -> Option<(Vec<u8>, u32)> {
    let (addr, bits) = match id.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (id, None),
    };
    let bytes = match addr.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
        std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    let max = bytes.len() as u32 * 8;
    let bits = bits.map_or(Some(max), |b| b.parse::<u32>().ok().filter(|b| *b <= max))?;
    Some((bytes, bits))
}

/// Whether the client address `client` is in the network `acl_id` (`addr[/bits]`), as
/// ZooKeeper's `IPAuthenticationProvider.matches`: the first `bits` bits are equal.
fn ip_matches(client: &str, acl_id: &str) -> bool {
    let (Some((net, bits)), Ok(ip)) = (ip_network(acl_id), client.parse::<std::net::IpAddr>()) else {
        return false;
    };
    let ip = match ip {
        std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
        std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    if ip.len() != net.len() {
        return false;
    }
    (0..bits as usize).all(|i| (ip[i / 8] ^ net[i / 8]) & (0x80 >> (i % 8)) == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkeeper_wire::perms;

    #[test]
    fn digest_matches_zookeeper() {
        // base64(sha1("super:secret")), as `DigestAuthenticationProvider.generateDigest` computes it.
        assert_eq!(digest_id("super:secret", true).unwrap(), "super:lK75jTNcA+U9vtVEw5vB51mj/w4=");
        assert_eq!(digest_id("super:secret", false), digest_id("super:secret", true));
    }

    #[test]
    fn credentials_without_exactly_one_colon_follow_each_server() {
        // ZooKeeper: no colon, the whole credential is the user; several, the first part is.
        assert_eq!(digest_id("nocolon", true).unwrap(), "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g=");
        assert!(digest_id("a:b:c", true).unwrap().starts_with("a:"));
        // Keeper: `std::count(data, ':') != 1` is ZAUTHFAILED.
        assert_eq!((digest_id("nocolon", false), digest_id("a:b:c", false)), (None, None));
        assert_eq!(authenticate("digest", b"nocolon", None, false), Err(ZkError::AuthFailed));
        assert!(authenticate("digest", b"nocolon", None, true).is_ok());
    }

    #[test]
    fn ip_acls_match_by_network() {
        let client = [Id { scheme: "ip".into(), id: "127.0.0.1".into() }];
        let acl = |id: &str| vec![Acl::new(perms::READ, "ip", id)];
        for (id, ok) in [
            ("0.0.0.0/0", true),
            ("127.0.0.1", true),
            ("127.0.0.0/8", true),
            ("127.0.0.2", false),
            ("192.0.2.1", false),
        ] {
            assert_eq!(allowed(&acl(id), &client, perms::READ), ok, "{id}");
        }
        assert!(!allowed(&acl("::1"), &client, perms::READ));
    }

    #[test]
    fn checks_and_fixup() {
        let user = authenticate("digest", b"u:p", None, false).unwrap();
        let acl = vec![Acl { perms: perms::READ, id: user.clone() }];
        assert!(allowed(&acl, std::slice::from_ref(&user), perms::READ));
        assert!(!allowed(&acl, std::slice::from_ref(&user), perms::WRITE));
        assert!(!allowed(&acl, &[], perms::READ));
        assert!(allowed(&Acl::open(), &[], perms::ADMIN));
        let sup = authenticate("digest", b"super:secret", Some("super:lK75jTNcA+U9vtVEw5vB51mj/w4="), true).unwrap();
        assert!(allowed(&acl, &[sup], perms::WRITE));
        assert_eq!(fixup(&[], &[], true), Err(ZkError::InvalidAcl));
        assert_eq!(fixup(&[Acl::new(31, "auth", "")], &[], true), Err(ZkError::InvalidAcl));
        assert_eq!(
            fixup(&[Acl::new(31, "auth", "")], std::slice::from_ref(&user), true).unwrap(),
            acl.iter().map(|a| Acl { perms: 31, ..a.clone() }).collect::<Vec<_>>()
        );
        assert_eq!(fixup(&[Acl::new(31, "world", "nobody")], &[], true), Err(ZkError::InvalidAcl));
        assert_eq!(fixup(&[Acl::new(31, "sasl", "x")], &[], true), Err(ZkError::InvalidAcl));
        assert!(fixup(&[Acl::new(31, "ip", "127.0.0.1")], &[], true).is_ok());
        assert_eq!(fixup(&[Acl::new(31, "ip", "10.0.0.0/33")], &[], true), Err(ZkError::InvalidAcl));
        assert_eq!(fixup(&[Acl::new(31, "ip", "999.1.1.1")], &[], true), Err(ZkError::InvalidAcl));
        assert_eq!(authenticate("sasl", b"x", None, true), Err(ZkError::AuthFailed));
    }
}
