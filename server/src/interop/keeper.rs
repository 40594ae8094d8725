//! ClickHouse Keeper snapshot files (`snapshot_<index>.bin.zstd`, or `.bin` in ClickHouse's
//! compressed blocks), read in formats V5 and V6 and written in V6, the format Keeper has
//! written since 22.x and every later release reads. Layout, from `KeeperStorageSnapshot::
//! serialize` and `KeeperSnapshotReader` (`src/Coordination/KeeperSnapshotManager.cpp`); all
//! integers little-endian, strings a LEB128 length and the bytes:
//!
//! | field | encoding |
//! |---|---|
//! | version | u8 (5 or 6) |
//! | NuRaft snapshot metadata | varuint length, then: u8 type, u64 last log index, u64 its term, u64 size, the cluster config (u64 log index, u64 previous, u8 async, i32-length user context, i32 server count, servers) |
//! | zxid, digest version, digest | i64, u8 (0 = none), u64 if not none |
//! | next session id | i64 |
//! | ACL map | u64 count; each: u64 id, u64 count, ACLs (i32 perms, str scheme, str id) |
//! | nodes | u64 count; each: str path, str data, u64 ACL id, (V5: u8 is_sequential), i64 czxid, mzxid, ctime, mtime, i32 version, cversion, aversion, i64 ephemeralOwner, (V5: i32 data length), i32 numChildren, i64 pzxid, i32 sequence counter, (V5: u64 size in memory) |
//! | sessions | u64 count; each: i64 id, i64 timeout ms, u64 count of (str scheme, str id) auths |
//! | cluster config | optional: varuint length and NuRaft's bytes |
//!
//! Keeper leaves the children of `/keeper` (its system nodes with data) out of the file, but
//! counts them in the digest.

use std::path::{Path, PathBuf};

use testkeeper_core::digest::DIGEST_VERSION;
use testkeeper_core::node::{NodeStat, CONTAINER_OWNER};
use testkeeper_core::state::{State, StateOptions};
use testkeeper_wire::Acl;

use super::cursor::{utf8, Cursor, LeWriter, Malformed, Read};
use super::{build, read_file, Foreign, ForeignNode, ImportError, Imported};

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The format `export` writes.
pub const EXPORT_VERSION: u8 = 6;

/// The newest Keeper snapshot file in `dir`, if any (by the index in its name; Keeper's
/// newer releases add a random suffix: `snapshot_<index>_<hex>.bin.zstd`).
///
/// # Errors
/// The directory cannot be listed.
pub fn newest_in(dir: &Path) -> Result<Option<PathBuf>, ImportError> {
    let io = |e: std::io::Error| ImportError::Io { file: dir.to_path_buf(), why: e.to_string() };
    let mut best: Option<(u64, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(index) = index_of(&name) {
            if best.as_ref().is_none_or(|(b, _)| index > *b) {
                best = Some((index, path));
            }
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// The log index in a Keeper snapshot file name.
fn index_of(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("snapshot_")?;
    if !(rest.ends_with(".bin") || rest.ends_with(".bin.zstd")) {
        return None;
    }
    rest.split(['_', '.']).next()?.parse().ok()
}

/// Imports one Keeper snapshot file.
///
/// # Errors
/// See [`ImportError`].
pub fn import_file(file: &Path, opts: &StateOptions) -> Result<Imported, ImportError> {
    let raw = read_file(file)?;
    let format = |e: Malformed| ImportError::Format { file: file.to_path_buf(), why: e.to_string() };
    let foreign = read(&raw).map_err(format)?;
    let state = build(&foreign, opts, file)?;
    Ok(Imported {
        state,
        files: vec![file.to_path_buf()],
        format: "ClickHouse Keeper snapshot",
        stored_digest: foreign.stored_digest,
        txns_applied: 0,
        txns_skipped: 0,
    })
}

/// Decompresses and parses a Keeper snapshot file's bytes.
///
/// # Errors
/// What is wrong, and where: in the file for its compression, in the decompressed
/// snapshot for its content.
pub fn read(raw: &[u8]) -> Result<Foreign, Malformed> {
    let body = if raw.starts_with(&ZSTD_MAGIC) {
        zstd::stream::decode_all(raw)
            .map_err(|e| Malformed { offset: 0, why: format!("not a complete zstd stream: {e}") })?
    } else if super::ch_blocks::looks_like(raw) {
        super::ch_blocks::decode(raw)?
    } else {
        let why = "neither zstd nor ClickHouse compressed blocks: not a Keeper snapshot".to_string();
        return Err(Malformed { offset: 0, why });
    };
    parse(&body).map_err(|e| Malformed { offset: e.offset, why: format!("{} (in the decompressed snapshot)", e.why) })
}

pub(crate) fn parse(body: &[u8]) -> Read<Foreign> {
    let mut c = Cursor::new(body);
    let version = c.u8("version")?;
    if !(5..=6).contains(&version) {
        return c.fail(format!("format V{version}: testkeeper reads V5 and V6"));
    }
    let meta_len = c.varuint("metadata length")?;
    let meta_len = c.count(meta_len, 1, "metadata")?;
    let mut meta = Cursor::new(c.take(meta_len, "metadata")?);
    meta.u8("snapshot type")?;
    let index = meta.le_u64("last log index")?;
    let term = meta.le_u64("last log term")?;
    let zxid = c.le_i64("zxid")?;
    let digest_version = c.u8("digest version")?;
    let digest = if digest_version != 0 { Some(c.le_u64("digest")?) } else { None };
    let next_session_id = c.le_i64("next session id")?;
    let n = c.le_u64("ACL map size")?;
    let mut acl_map = std::collections::HashMap::new();
    for _ in 0..c.count(n, 16, "ACL map")? {
        let id = c.le_u64("ACL id")?;
        let k = c.le_u64("ACL count")?;
        let mut list = Vec::new();
        for _ in 0..c.count(k, 6, "ACLs")? {
            let perms = c.le_i32("permissions")?;
            let at = c.pos();
            let scheme = utf8(c.ch_bytes("scheme")?, at, "scheme")?;
            let at = c.pos();
            let id = utf8(c.ch_bytes("id")?, at, "id")?;
            list.push(Acl::new(perms, &scheme, &id));
        }
        acl_map.insert(id, list);
    }
    let n = c.le_u64("node count")?;
    let mut nodes = Vec::new();
    for _ in 0..c.count(n, 60, "nodes")? {
        nodes.push(node(&mut c, version, &acl_map)?);
    }
    let n = c.le_u64("session count")?;
    let mut sessions = Vec::new();
    for _ in 0..c.count(n, 24, "sessions")? {
        let id = c.le_i64("session id")?;
        let timeout = c.le_i64("session timeout")?;
        let auths = c.le_u64("session auth count")?;
        for _ in 0..c.count(auths, 2, "session auths")? {
            c.ch_bytes("auth scheme")?;
            c.ch_bytes("auth id")?;
        }
        let timeout = i32::try_from(timeout).or_else(|_| c.fail(format!("session {id:#x}: timeout {timeout}")))?;
        sessions.push((id, timeout));
    }
    // What may follow is NuRaft's cluster config: Keeper takes its cluster from its own
    // configuration, and so does testkeeper.
    let stored_digest = digest.filter(|_| digest_version == DIGEST_VERSION);
    Ok(Foreign { nodes, sessions, zxid, next_session_id, index, term, stored_digest })
}

fn node(c: &mut Cursor<'_>, version: u8, acl_map: &std::collections::HashMap<u64, Vec<Acl>>) -> Read<ForeignNode> {
    let at = c.pos();
    let path = utf8(c.ch_bytes("node path")?, at, "node path")?;
    let data = c.ch_bytes("node data")?.to_vec();
    let acl_id = c.le_u64("node ACL id")?;
    // 0 (and ZooKeeper's -1, as keeper-converter writes it) is a node without an ACL list.
    let acl = match acl_id {
        0 | u64::MAX => Vec::new(),
        id => match acl_map.get(&id) {
            Some(list) => list.clone(),
            None => return c.fail(format!("{path}: ACL id {id} is not in the ACL map")),
        },
    };
    if version < 6 {
        c.u8("is_sequential")?;
    }
    let (czxid, mzxid) = (c.le_i64("czxid")?, c.le_i64("mzxid")?);
    let (ctime, mtime) = (c.le_i64("ctime")?, c.le_i64("mtime")?);
    let (v, cversion, aversion) = (c.le_i32("version")?, c.le_i32("cversion")?, c.le_i32("aversion")?);
    let owner = c.le_i64("ephemeralOwner")?;
    if version < 6 {
        c.le_i32("data length")?;
    }
    c.le_i32("numChildren")?;
    let pzxid = c.le_i64("pzxid")?;
    let seq = c.le_i32("sequence counter")?;
    if version == 5 {
        c.le_u64("size in memory")?;
    }
    let stat = NodeStat { czxid, mzxid, ctime, mtime, version: v, cversion, aversion, pzxid };
    let data = Some(data);
    Ok(ForeignNode { path, data, acl, stat, owner, ttl: 0, seq: i64::from(seq) })
}

/// Why a state cannot be written as a Keeper snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportError {
    /// A TTL node: V6 has no field for its TTL (Keeper added TTL nodes with V8).
    Ttl(String),
    /// A sequence counter past i32, which V6 stores it in.
    Counter(String),
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::Ttl(p) => write!(f, "{p} is a TTL node; Keeper snapshot V6 cannot hold one"),
            ExportError::Counter(p) => write!(f, "{p}: sequence counter past 2^31, which V6 cannot hold"),
        }
    }
}

impl std::error::Error for ExportError {}

/// `state` as a Keeper snapshot file (V6, zstd), as Keeper names it `snapshot_<index>.bin.zstd`.
///
/// # Errors
/// See [`ExportError`].
pub fn export(state: &State) -> Result<Vec<u8>, ExportError> {
    let mut w = LeWriter::default();
    w.u8(EXPORT_VERSION);
    // NuRaft's snapshot metadata: type 0 (raw binary), index, term, size 0, and a cluster
    // config with no servers (a Keeper loading the file keeps its own).
    let mut meta = LeWriter::default();
    meta.u8(0);
    meta.u64(state.last_index());
    meta.u64(state.last_term());
    meta.u64(0);
    meta.u64(state.last_index());
    meta.u64(0);
    meta.u8(0);
    meta.i32(0);
    meta.i32(0);
    w.varuint(meta.0.len() as u64);
    w.0.extend_from_slice(&meta.0);
    w.i64(state.zxid());
    if state.tree().digest_enabled() {
        w.u8(DIGEST_VERSION);
        w.u64(state.tree().digest());
    } else {
        w.u8(0);
    }
    w.i64(state.next_session_id());
    // ACL lists numbered from 1 by first use in path order (0: no list), as Keeper's map
    // numbers them from 1; the map is written sorted by id, as Keeper sorts it.
    let mut lists: Vec<Vec<Acl>> = Vec::new();
    let mut nodes = Vec::new();
    let mut failure = None;
    testkeeper_core::snapshot::walk(state, |p, n| {
        if failure.is_none() && state.tree().ttl_of(p) != 0 {
            failure = Some(ExportError::Ttl(p.to_string()));
        }
        if failure.is_none() && i32::try_from(n.seq()).is_err() {
            failure = Some(ExportError::Counter(p.to_string()));
        }
        // Keeper's own system nodes with data are not in its snapshots.
        if p.starts_with("/keeper/") && state.rules().keeper_system_nodes {
            return;
        }
        let acl: &[Acl] = n.acl();
        let id = if acl.is_empty() {
            0
        } else if let Some(i) = lists.iter().position(|l| l.as_slice() == acl) {
            i as u64 + 1
        } else {
            lists.push(acl.to_vec());
            lists.len() as u64
        };
        nodes.push((p.to_string(), n.data().to_vec(), id, n.stat, n.owner(), n.num_children(), n.seq()));
    });
    if let Some(e) = failure {
        return Err(e);
    }
    w.u64(lists.len() as u64);
    for (i, list) in lists.iter().enumerate() {
        w.u64(i as u64 + 1);
        w.u64(list.len() as u64);
        for a in list {
            w.i32(a.perms);
            w.bytes(a.id.scheme.as_bytes());
            w.bytes(a.id.id.as_bytes());
        }
    }
    w.u64(nodes.len() as u64);
    for (path, data, acl_id, s, owner, children, seq) in &nodes {
        w.bytes(path.as_bytes());
        w.bytes(data);
        w.u64(*acl_id);
        for v in [s.czxid, s.mzxid, s.ctime, s.mtime] {
            w.i64(v);
        }
        for v in [s.version, s.cversion, s.aversion] {
            w.i32(v);
        }
        // Containers keep Keeper's marker owner (`CONTAINER_EPHEMERAL_OWNER`, i64::MIN).
        w.i64(if *owner == CONTAINER_OWNER { i64::MIN } else { *owner });
        w.i32(*children as i32);
        w.i64(s.pzxid);
        w.i32(*seq as i32);
    }
    w.u64(state.sessions().len() as u64);
    for (id, info) in state.sessions() {
        w.i64(*id);
        w.i64(i64::from(info.timeout_ms));
        w.u64(0);
    }
    Ok(zstd::bulk::compress(&w.0, 3).expect("zstd compresses any input in memory"))
}

/// The file name Keeper gives a snapshot at `index`.
pub fn file_name(index: u64) -> String {
    format!("snapshot_{index}.bin.zstd")
}
