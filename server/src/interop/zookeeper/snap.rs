//! A ZooKeeper snapshot file (`FileSnap.serialize`, jute big-endian): the file header
//! (`ZKSN`, version 2, dbid), the sessions (i64 id, i32 timeout), the ACL cache (i32 count;
//! i64 id, a vector of ACLs), the nodes depth first (path, the root as "", data buffer, i64
//! ACL id, the persisted stat) up to the path "/", then Adler-32 seals (an i64 checksum of every
//! byte before it and the string "/"), with the zxid digest and last processed zxid of newer
//! releases each followed by a seal of their own.

use std::collections::HashMap;
use std::path::Path;

use testkeeper_core::node::{NodeStat, CONTAINER_OWNER};
use testkeeper_wire::Acl;

use super::super::cursor::{Cursor, Malformed, Read};
use super::super::{Foreign, ForeignNode, ImportError};

const MAGIC: i32 = 0x5A4B_534E; // "ZKSN"
/// `ReferenceCountedACLCache.OPEN_UNSAFE_ACL_ID`: world:anyone with every permission.
const OPEN_ACL_ID: i64 = -1;
/// `EphemeralType`: the top byte of a TTL node's ephemeralOwner.
const TTL_MASK: i64 = 0xFF00_0000_0000_0000_u64 as i64;

/// Parses a snapshot's bytes (`file` only names it in errors).
pub fn read(bytes: &[u8], file: &Path) -> Result<Foreign, ImportError> {
    let name = file.to_string_lossy();
    if name.ends_with(".gz") || name.ends_with(".snappy") {
        let why = "a compressed ZooKeeper snapshot (zookeeper.snapshot.compression.method): \
                   decompress it first, or start ZooKeeper with the method none"
            .to_string();
        return Err(ImportError::Format { file: file.to_path_buf(), why });
    }
    parse(bytes).map_err(|e| ImportError::Format { file: file.to_path_buf(), why: format!("ZooKeeper snapshot {e}") })
}

pub(crate) fn parse(b: &[u8]) -> Read<Foreign> {
    let mut c = Cursor::new(b);
    if c.be_i32("magic")? != MAGIC {
        return c.fail("not a ZooKeeper snapshot (magic ZKSN)");
    }
    let version = c.be_i32("version")?;
    if version != 2 {
        return c.fail(format!("snapshot version {version}: testkeeper reads 2"));
    }
    c.be_i64("dbid")?;
    let n = c.be_i32("session count")?;
    let mut sessions = Vec::new();
    for _ in 0..c.count(n.max(0) as u64, 12, "sessions")? {
        sessions.push((c.be_i64("session id")?, c.be_i32("session timeout")?));
    }
    let n = c.be_i32("ACL cache size")?;
    let mut acls: HashMap<i64, Vec<Acl>> = HashMap::new();
    for _ in 0..c.count(n.max(0) as u64, 12, "ACL cache")? {
        let id = c.be_i64("ACL id")?;
        acls.insert(id, acl_vector(&mut c)?);
    }
    let mut nodes = Vec::new();
    // Raw cversions count creates only; the visible one needs the child count (below).
    let mut raw_cversion = Vec::new();
    loop {
        let path = c.jute_string("node path")?;
        if path == "/" {
            break;
        }
        let path = if path.is_empty() { "/".to_string() } else { path };
        let data = c.jute_buffer("node data")?.map(<[u8]>::to_vec);
        let acl_id = c.be_i64("node ACL id")?;
        let acl = match acl_id {
            OPEN_ACL_ID => Acl::open(),
            id => match acls.get(&id) {
                Some(list) => list.clone(),
                None => return c.fail(format!("{path}: ACL id {id} is not in the ACL cache")),
            },
        };
        let (czxid, mzxid) = (c.be_i64("czxid")?, c.be_i64("mzxid")?);
        let (ctime, mtime) = (c.be_i64("ctime")?, c.be_i64("mtime")?);
        let (version, cversion, aversion) = (c.be_i32("version")?, c.be_i32("cversion")?, c.be_i32("aversion")?);
        let owner = c.be_i64("ephemeralOwner")?;
        let pzxid = c.be_i64("pzxid")?;
        let (owner, ttl) = match owner {
            i64::MIN => (CONTAINER_OWNER, 0),
            o if o & TTL_MASK == TTL_MASK => (0, o & !TTL_MASK),
            o => (o, 0),
        };
        let stat = NodeStat { czxid, mzxid, ctime, mtime, version, cversion: 0, aversion, pzxid };
        raw_cversion.push(cversion);
        nodes.push(ForeignNode { path, data, acl, stat, owner, ttl, seq: i64::from(cversion) });
    }
    seal(&mut c, b)?;
    // Newer releases: the zxid digest, then the last processed zxid, each sealed.
    let mut zxid = None;
    if !c.at_end() {
        let z = c.be_i64("digest zxid")?;
        c.be_i32("digest version")?;
        c.be_i64("digest")?;
        seal(&mut c, b)?;
        zxid = Some(z);
    }
    if !c.at_end() {
        zxid = Some(c.be_i64("last processed zxid")?);
        seal(&mut c, b)?;
    }
    if !c.at_end() {
        return c.fail(format!("{} bytes after the last seal", c.left()));
    }
    // ZooKeeper stores creates in cversion and shows 2*creates - children (DataNode.copyStat).
    let mut children: HashMap<&str, i32> = HashMap::new();
    for n in &nodes {
        if let Some((parent, _)) = testkeeper_core::path::split(&n.path) {
            *children.entry(parent).or_default() += 1;
        }
    }
    let visible: Vec<i32> = (nodes.iter().zip(&raw_cversion))
        .map(|(n, raw)| raw.wrapping_mul(2) - children.get(n.path.as_str()).copied().unwrap_or(0))
        .collect();
    for (n, v) in nodes.iter_mut().zip(visible) {
        n.stat.cversion = v;
    }
    let zxid = zxid.unwrap_or_else(|| nodes.iter().map(|n| n.stat.mzxid.max(n.stat.pzxid)).max().unwrap_or(0));
    Ok(Foreign { nodes, sessions, zxid, next_session_id: 0, index: 0, term: 0, stored_digest: None })
}

/// jute's `vector<ACL>` (-1 = null, read as empty).
pub(super) fn acl_vector(c: &mut Cursor<'_>) -> Read<Vec<Acl>> {
    let n = c.be_i32("ACL count")?;
    let mut list = Vec::new();
    for _ in 0..c.count(n.max(0) as u64, 12, "ACLs")? {
        let perms = c.be_i32("permissions")?;
        let scheme = c.jute_string("scheme")?;
        let id = c.jute_string("id")?;
        list.push(Acl::new(perms, &scheme, &id));
    }
    Ok(list)
}

/// `SnapStream.sealStream`: the Adler-32 of every byte so far, then the path "/".
fn seal(c: &mut Cursor<'_>, all: &[u8]) -> Read<()> {
    let upto = c.pos();
    let stored = c.be_i64("checksum")?;
    let mut a = adler2::Adler32::new();
    a.write_slice(&all[..upto]);
    let computed = i64::from(a.checksum());
    if stored != computed {
        return Err(Malformed { offset: upto, why: format!("Adler-32 {stored:#x} stored, {computed:#x} computed") });
    }
    if c.jute_string("seal path")? != "/" {
        return c.fail("the seal's path is not \"/\"");
    }
    Ok(())
}
