//! A snapshot: the full state at one log index, serialized deterministically, so two servers
//! at the same index write the same bytes (as Keeper sorts its ACLs and sessions for the same
//! reason). Nodes come in path order (depth first, children by name, so parents come before
//! their children), ACL lists are numbered by first use in that order, sessions by id.
//!
//! The body (before compression, which the server adds) is little-endian:
//!
//! | field | encoding |
//! |---|---|
//! | magic | `TKSNAP01` (8 bytes) |
//! | index, term | u64, u64 |
//! | zxid | i64 |
//! | digest version, digest | u8, u64 |
//! | next session id | i64 |
//! | node count | u64 |
//! | ACL lists | u32 count, then each: the list (u32 count; per ACL i32 perms, str scheme, str id) |
//! | nodes | per node: str path, data (i32 length, -1 = null), u32 ACL list number, i64 czxid, i64 mzxid, i64 ctime, i64 mtime, i32 version, i32 cversion, i32 aversion, i64 pzxid, i64 owner, i64 ttl, i64 sequential counter |
//! | sessions | u32 count, then each: i64 id, i32 timeout, 16-byte password |
//! | checksum | u32 CRC-32 of every byte before it |
//!
//! (`str` = u32 length + UTF-8 bytes.) Loading rebuilds the tree through `apply::Restore` and
//! checks the recomputed digest against the stored one.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::apply::{Restore, RestoredNode};
use crate::codec::{Reader, Writer};
use crate::digest::DIGEST_VERSION;
use crate::flavor::Rules;
use crate::node::{AclList, NodeStat};
use crate::path;
use crate::state::State;
use crate::tree::NodeRef;

const MAGIC: &[u8; 8] = b"TKSNAP01";

/// What a snapshot says about itself, readable without rebuilding the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub index: u64,
    pub term: u64,
    pub zxid: i64,
    pub digest_version: u8,
    pub digest: u64,
    pub next_session_id: i64,
    pub node_count: u64,
}

/// Why bytes are not a valid snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    Format(String),
    Checksum {
        stored: u32,
        computed: u32,
    },
    /// The tree it holds does not have the digest it says it has.
    Digest {
        stored: u64,
        computed: u64,
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Format(why) => write!(f, "not a valid snapshot: {why}"),
            SnapshotError::Checksum { stored, computed } => {
                write!(f, "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
            SnapshotError::Digest { stored, computed } => {
                write!(f, "the tree's digest is {computed}, the snapshot says {stored}")
            }
        }
    }
}

impl std::error::Error for SnapshotError {}

fn format(e: crate::codec::CodecError) -> SnapshotError {
    SnapshotError::Format(e.0)
}

/// Every node in path order (parents first, children by name) with its path; what a snapshot
/// writes, and what an export to another server's format walks.
pub fn walk(state: &State, mut f: impl FnMut(&str, &NodeRef<'_>)) {
    let root = state.tree.get("/").expect("invariant: the root exists");
    let mut stack: Vec<(String, NodeRef<'_>)> = vec![("/".to_string(), root)];
    while let Some((p, n)) = stack.pop() {
        f(&p, &n);
        // Reversed onto the stack, so the smallest name comes off first.
        stack.extend(n.children().into_iter().rev().map(|c| (path::join(&p, c.name()), c)));
    }
}

/// Serializes `state` (uncompressed).
pub fn write(state: &State) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + state.tree.len() * 96);
    let mut w = Writer::new(&mut out);
    for b in MAGIC {
        w.u8(*b);
    }
    w.u64(state.last_index);
    w.u64(state.last_term);
    w.i64(state.zxid);
    let enabled = state.tree.digest_enabled();
    w.u8(if enabled { DIGEST_VERSION } else { 0 });
    w.u64(if enabled { state.tree.digest() } else { 0 });
    w.i64(state.next_session_id);
    w.u64(state.tree.len() as u64);
    // ACL lists by first use in path order: the numbering follows from the tree alone.
    let mut acl_ids: HashMap<*const Vec<testkeeper_wire::Acl>, u32> = HashMap::new();
    let mut acls: Vec<AclList> = Vec::new();
    walk(state, |_, n| {
        acl_ids.entry(Arc::as_ptr(n.acl())).or_insert_with(|| {
            acls.push(n.acl().clone());
            acls.len() as u32 - 1
        });
    });
    w.u32(acls.len() as u32);
    for a in &acls {
        w.acl(a);
    }
    walk(state, |p, n| {
        w.str(p);
        w.data(if n.data_is_null() { None } else { Some(n.data()) });
        w.u32(acl_ids[&Arc::as_ptr(n.acl())]);
        let s = n.stat;
        for v in [s.czxid, s.mzxid, s.ctime, s.mtime] {
            w.i64(v);
        }
        for v in [s.version, s.cversion, s.aversion] {
            w.i32(v);
        }
        w.i64(s.pzxid);
        w.i64(n.owner());
        w.i64(state.tree.ttl_of(p));
        w.i64(n.seq());
    });
    w.u32(state.sessions.len() as u32);
    for (id, info) in &state.sessions {
        w.i64(*id);
        w.i32(info.timeout_ms);
        info.passwd.iter().for_each(|b| w.u8(*b));
    }
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// CRC-32 (IEEE), the same as the log records use.
fn crc32(b: &[u8]) -> u32 {
    crc32fast::hash(b)
}

/// Reads only the header of a serialized snapshot.
///
/// # Errors
/// Bytes that do not start like a snapshot.
pub fn header(body: &[u8]) -> Result<Header, SnapshotError> {
    let mut r = Reader::new(body);
    let magic: Vec<u8> = (0..8).map(|_| r.u8()).collect::<Result<_, _>>().map_err(format)?;
    if magic != MAGIC {
        return Err(SnapshotError::Format("bad magic".into()));
    }
    Ok(Header {
        index: r.u64().map_err(format)?,
        term: r.u64().map_err(format)?,
        zxid: r.i64().map_err(format)?,
        digest_version: r.u8().map_err(format)?,
        digest: r.u64().map_err(format)?,
        next_session_id: r.i64().map_err(format)?,
        node_count: r.u64().map_err(format)?,
    })
}

/// One node as a snapshot stores it (for `testkeeper snapshot inspect --dump`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedNode {
    pub path: String,
    pub data: Option<Vec<u8>>,
    pub acl: Vec<testkeeper_wire::Acl>,
    pub stat: NodeStat,
    pub owner: i64,
    pub ttl: i64,
    pub seq: i64,
}

/// Checks the trailing CRC-32 of a serialized snapshot (which needs no flavor rules, so a
/// server can check its newest snapshot before it opens anything for writing); the content
/// before the checksum.
///
/// # Errors
/// The body is shorter than a checksum, or the checksum differs.
pub fn verify_checksum(body: &[u8]) -> Result<&[u8], SnapshotError> {
    if body.len() < 4 {
        return Err(SnapshotError::Format("shorter than its checksum".into()));
    }
    let (content, tail) = body.split_at(body.len() - 4);
    let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    let computed = crc32(content);
    if stored != computed {
        return Err(SnapshotError::Checksum { stored, computed });
    }
    Ok(content)
}

/// Verifies a serialized snapshot and rebuilds its state with `rules`, calling `each` for
/// every node as it is read.
///
/// # Errors
/// A checksum, format or digest that does not verify.
pub fn read(body: &[u8], rules: &Rules, mut each: impl FnMut(&DumpedNode)) -> Result<State, SnapshotError> {
    let content = verify_checksum(body)?;
    let h = header(content)?;
    let mut r = Reader::new(&content[8 + 8 + 8 + 8 + 1 + 8 + 8 + 8..]);
    let n_acls = r.count(4).map_err(format)?;
    let acls: Vec<AclList> = (0..n_acls).map(|_| r.acl().map(Arc::new)).collect::<Result<_, _>>().map_err(format)?;
    let mut restore = Restore::new(rules.clone(), h.digest_version != 0);
    for i in 0..h.node_count {
        let path = r.string().map_err(format)?;
        let data = r.data().map_err(format)?;
        let acl_no = r.u32().map_err(format)? as usize;
        let acl = acls.get(acl_no).ok_or_else(|| SnapshotError::Format(format!("node {path}: ACL list {acl_no}")))?;
        let (czxid, mzxid, ctime, mtime) = (r.i64(), r.i64(), r.i64(), r.i64());
        let (version, cversion, aversion) = (r.i32(), r.i32(), r.i32());
        let stat = NodeStat {
            czxid: czxid.map_err(format)?,
            mzxid: mzxid.map_err(format)?,
            ctime: ctime.map_err(format)?,
            mtime: mtime.map_err(format)?,
            version: version.map_err(format)?,
            cversion: cversion.map_err(format)?,
            aversion: aversion.map_err(format)?,
            pzxid: r.i64().map_err(format)?,
        };
        let (owner, ttl, seq) = (r.i64().map_err(format)?, r.i64().map_err(format)?, r.i64().map_err(format)?);
        let valid = if i == 0 { path == "/" } else { path::split(&path).is_some() };
        if !valid {
            return Err(SnapshotError::Format(format!("node {i} has path {path:?}")));
        }
        each(&DumpedNode { path: path.clone(), data: data.clone(), acl: acl.to_vec(), stat, owner, ttl, seq });
        restore
            .try_node(RestoredNode { path: &path, data: data.as_deref(), acl, stat, owner, ttl, seq })
            .map_err(|e| SnapshotError::Format(e.to_string()))?;
    }
    let n_sessions = r.count(28).map_err(format)?;
    for _ in 0..n_sessions {
        let (id, timeout, passwd) = (r.i64().map_err(format)?, r.i32().map_err(format)?, r.array16().map_err(format)?);
        restore.session(id, timeout, passwd);
    }
    r.end().map_err(format)?;
    let state = restore.finish(h.zxid, h.next_session_id, h.index, h.term);
    if h.digest_version == DIGEST_VERSION {
        let computed = state.tree.recompute_digest();
        if computed != h.digest || state.tree.digest() != computed {
            return Err(SnapshotError::Digest { stored: h.digest, computed });
        }
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flavor::Flavor;
    use crate::testutil::*;
    use testkeeper_wire::Request;

    fn busy(flavor: Flavor) -> Harness {
        let mut h = Harness::new(flavor);
        let s = h.session();
        for r in [
            create("/a", b"x", 0),
            create("/a/b-", b"", 2),
            create("/a/b-", b"", 2),
            create("/a-b", b"", 0),
            create("/e", b"", 1),
            set("/a", b"yy", -1),
            Request::Multi(vec![create("/m", b"", 0), delete("/a-b", -1)]),
        ] {
            h.write(s, &r);
        }
        h.session();
        h
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn a_snapshot_round_trips_to_the_same_state_and_the_same_bytes() {
        for flavor in [Flavor::Zookeeper, Flavor::Keeper] {
            let h = busy(flavor);
            let bytes = write(&h.state);
            let back = read(&bytes, h.state.rules(), |_| {}).expect("valid");
            assert_eq!(back.tree().digest(), h.state.tree().digest());
            assert_eq!(back.sessions(), h.state.sessions());
            assert_eq!(
                (back.zxid(), back.last_index(), back.next_session_id()),
                (h.state.zxid(), h.state.last_index(), h.state.next_session_id())
            );
            assert_eq!(write(&back), bytes, "{flavor:?}: same state, same bytes");
            // A replica that replayed the log writes the same file.
            assert_eq!(write(&h.replay().unwrap()), bytes);
            // The sequential counters survive: the next sequential child continues the count.
            let mut h2 = Harness::new(flavor);
            h2.state = back;
            h2.proposer = crate::propose::Proposer::new(&h2.state, 1);
            let s = h2.session();
            h2.write(s, &create("/a/b-", b"", 2));
            assert!(h2.state.tree().get("/a/b-0000000002").is_some(), "{flavor:?}");
        }
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let h = busy(Flavor::Keeper);
        let bytes = write(&h.state);
        for i in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(read(&bad, h.state.rules(), |_| {}).is_err(), "byte {i}");
        }
        assert!(read(&bytes[..bytes.len() - 1], h.state.rules(), |_| {}).is_err());
    }
}
