//! ClickHouse Keeper's tree digest, version 5: a SipHash-2-4 (key 0,0) of each node's path, data
//! and stored stat, summed with wrapping over every node.
//!
//! Source: ClickHouse/ClickHouse `KeeperStorage` `calculateDigest` and `KeeperDigestVersion`;
//! see `docs/digest.md`. Strings are fed as raw bytes with no length and no terminator, which
//! is why this uses `Hasher::write` directly and never `Hash for str` (that appends 0xFF).

use std::hash::Hasher;

use siphasher::sip::SipHasher24;

/// The digest version this server computes (`KeeperDigestVersion::V5`).
pub const DIGEST_VERSION: u8 = 5;

/// The fields the digest covers, borrowed so that the same formula serves the tree and clients
/// (`testkeeper digest` computes it from what a client reads).
#[derive(Debug, Clone, Copy)]
pub struct DigestInput<'a> {
    pub path: &'a str,
    pub data: &'a [u8],
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
    pub num_children: i32,
    pub pzxid: i64,
    /// TTL in ms, or 0 for a node that is not a TTL node.
    pub ttl: i64,
}

impl<'a> DigestInput<'a> {
    /// The formula's input from what a client reads (`ttl` is not visible to clients: 0).
    pub fn from_stat(path: &'a str, data: &'a [u8], s: &testkeeper_wire::Stat) -> DigestInput<'a> {
        DigestInput {
            path,
            data,
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: s.ephemeral_owner,
            num_children: s.num_children,
            pzxid: s.pzxid,
            ttl: 0,
        }
    }
}

/// The digest of one node. Never 0: Keeper (V4+) maps 0 to 1 so 0 can mean "not computed".
pub fn node_digest(n: &DigestInput<'_>) -> u64 {
    DigestPrefix::new(n.path, n.data).finish(&StatFields::of(n))
}

/// The fields after the path and data, in the formula's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
    pub num_children: i32,
    pub pzxid: i64,
    pub ttl: i64,
}

impl StatFields {
    /// The fields of a stored node: its stat, and what the tree keeps beside it.
    pub fn new(s: &crate::node::NodeStat, owner: i64, num_children: i32, ttl: i64) -> StatFields {
        StatFields {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: owner,
            num_children,
            pzxid: s.pzxid,
            ttl,
        }
    }

    fn of(n: &DigestInput<'_>) -> StatFields {
        StatFields {
            czxid: n.czxid,
            mzxid: n.mzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            cversion: n.cversion,
            aversion: n.aversion,
            ephemeral_owner: n.ephemeral_owner,
            num_children: n.num_children,
            pzxid: n.pzxid,
            ttl: n.ttl,
        }
    }
}

/// The hash state after a node's path and data: a write that changes only the stat (a
/// parent's cversion, a version bump) finishes it twice, for the old digest and the new, and
/// never hashes the path and data again.
#[derive(Debug, Clone)]
pub struct DigestPrefix(SipHasher24);

impl DigestPrefix {
    /// The state after `path` and `data` (empty data is skipped, as Keeper does). The path's
    /// bytes are those it stands for (a raw byte kept as an escape is hashed as that byte,
    /// `testkeeper_wire::rawstr`), as Keeper hashes its `std::string`.
    pub fn new(path: &str, data: &[u8]) -> DigestPrefix {
        let mut h = SipHasher24::new_with_keys(0, 0);
        h.write(&testkeeper_wire::rawstr::raw_bytes(path));
        if !data.is_empty() {
            h.write(data);
        }
        DigestPrefix(h)
    }

    /// The node's digest with these stat fields.
    pub fn finish(&self, s: &StatFields) -> u64 {
        // One write of the fixed-size fields: the formula is one byte string, and a write per
        // field costs a buffer round trip each.
        let mut b = [0u8; 73];
        b[0..8].copy_from_slice(&s.czxid.to_le_bytes());
        b[8..16].copy_from_slice(&s.mzxid.to_le_bytes());
        b[16..24].copy_from_slice(&s.ctime.to_le_bytes());
        b[24..32].copy_from_slice(&s.mtime.to_le_bytes());
        b[32..36].copy_from_slice(&s.version.to_le_bytes());
        b[36..40].copy_from_slice(&s.cversion.to_le_bytes());
        b[40..44].copy_from_slice(&s.aversion.to_le_bytes());
        b[44..52].copy_from_slice(&s.ephemeral_owner.to_le_bytes());
        b[52..56].copy_from_slice(&s.num_children.to_le_bytes());
        b[56..64].copy_from_slice(&s.pzxid.to_le_bytes());
        let is_ttl = s.ttl > 0;
        b[64] = u8::from(is_ttl);
        let len = if is_ttl {
            b[65..73].copy_from_slice(&s.ttl.to_le_bytes());
            73
        } else {
            65
        };
        let mut h = self.0;
        h.write(&b[..len]);
        match h.finish() {
            0 => 1,
            d => d,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SipHash-2-4 reference vectors (Aumasson & Bernstein, key 00..0f, messages 00..n-1).
    #[test]
    fn siphash_reference_vectors() {
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        let expect: [(usize, u64); 4] =
            [(0, 0x726fdb47dd0e0e31), (1, 0x74f839c593dc67fd), (8, 0x93f5f5799a932462), (15, 0xa129ca6149be45e5)];
        for (len, want) in expect {
            let msg: Vec<u8> = (0..len as u8).collect();
            let mut h = SipHasher24::new_with_keys(k0, k1);
            h.write(&msg);
            assert_eq!(h.finish(), want, "len {len}");
        }
    }

    /// Streaming in pieces equals hashing the concatenation: the formula is one byte string.
    #[test]
    fn streaming_equals_concatenation() {
        let input = DigestInput {
            path: "/a",
            data: b"xyz",
            czxid: 1,
            mzxid: 2,
            ctime: 3,
            mtime: 4,
            version: 5,
            cversion: 6,
            aversion: 7,
            ephemeral_owner: 8,
            num_children: 9,
            pzxid: 10,
            ttl: 0,
        };
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"/axyz");
        for v in [1i64, 2, 3, 4] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        for v in [5i32, 6, 7] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&8i64.to_le_bytes());
        bytes.extend_from_slice(&9i32.to_le_bytes());
        bytes.extend_from_slice(&10i64.to_le_bytes());
        bytes.push(0);
        let mut h = SipHasher24::new_with_keys(0, 0);
        h.write(&bytes);
        assert_eq!(node_digest(&input), h.finish());
        // Empty data is skipped entirely, and a TTL adds the flag and the value.
        let empty = DigestInput { data: b"", ..input };
        let ttl = DigestInput { ttl: 100, ..input };
        assert_ne!(node_digest(&empty), node_digest(&input));
        assert_ne!(node_digest(&ttl), node_digest(&input));
    }

    /// A path holding a byte that is not UTF-8 (kept as an escape) hashes as that byte, as
    /// Keeper hashes its `std::string`; other paths hash as their UTF-8.
    #[test]
    fn a_raw_path_byte_hashes_as_the_byte() {
        let stat = StatFields {
            czxid: 1,
            mzxid: 1,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            num_children: 0,
            pzxid: 1,
            ttl: 0,
        };
        let raw = testkeeper_wire::rawstr::from_raw(b"/\xc3x");
        assert_ne!(raw.as_bytes(), b"/\xc3x");
        let mut h = SipHasher24::new_with_keys(0, 0);
        h.write(b"/\xc3x");
        h.write(b"d");
        let by_bytes = DigestPrefix(h).finish(&stat);
        assert_eq!(DigestPrefix::new(&raw, b"d").finish(&stat), by_bytes);
        assert_ne!(DigestPrefix::new("/\u{fffd}x", b"d").finish(&stat), by_bytes);
    }
}
