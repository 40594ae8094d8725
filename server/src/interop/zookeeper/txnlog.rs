//! ZooKeeper txn logs (`FileTxnLog`): the file header (`ZKLG`, version 2, dbid), then
//! records of an i64 Adler-32, the txn as a jute buffer, and the byte 'B'; the zeros
//! ZooKeeper preallocates (an empty buffer) end the log. A txn is its header (i64 session,
//! i32 cxid, i64 zxid, i64 time, i32 type), its record, and in newer releases a digest.
//!
//! Each txn becomes core entries applied with `State::apply`, a multi one entry per sub-op
//! under the same zxid (the tree after them is the same). A txn whose change the snapshot
//! already holds (ZooKeeper's snapshots are fuzzy: taken while txns apply) is skipped and
//! counted, as ZooKeeper's own replay ignores NODEEXISTS and NONODE there.

use std::path::Path;
use std::sync::Arc;

use testkeeper_core::node::CONTAINER_OWNER;
use testkeeper_core::state::State;
use testkeeper_core::txn::{CreateTxn, Entry, Op, Txn};
use testkeeper_wire::Acl;

use super::super::cursor::{Cursor, Malformed, Read};
use super::super::ImportError;
use super::snap::acl_vector;

const MAGIC: i32 = 0x5A4B_4C47; // "ZKLG"
const EOR: u8 = b'B';

/// ZooDefs.OpCode values a txn log holds.
mod ty {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const SET_DATA: i32 = 5;
    pub const SET_ACL: i32 = 7;
    pub const CHECK: i32 = 13;
    pub const MULTI: i32 = 14;
    pub const CREATE2: i32 = 15;
    pub const RECONFIG: i32 = 16;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const DELETE_CONTAINER: i32 = 20;
    pub const CREATE_TTL: i32 = 21;
    pub const CREATE_SESSION: i32 = -10;
    pub const CLOSE_SESSION: i32 = -11;
    pub const ERROR: i32 = -1;
}

/// One logged change, decoded.
enum Change {
    Create {
        path: String,
        data: Option<Vec<u8>>,
        acl: Vec<Acl>,
        owner: i64,
        ttl: i64,
    },
    Delete(String),
    SetData {
        path: String,
        data: Option<Vec<u8>>,
        version: i32,
    },
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: i32,
    },
    CreateSession(i32),
    CloseSession,
    /// A failed write or check: it took a zxid and changed nothing.
    Nothing,
}

/// Replays txn logs onto a state restored from the snapshot at `after`.
pub struct Replay {
    after: i64,
    pub applied: u64,
    pub skipped: u64,
}

impl Replay {
    pub fn new(after: i64) -> Replay {
        Replay { after, applied: 0, skipped: 0 }
    }

    /// Applies every txn of one log file with a zxid past the snapshot's.
    pub fn file(&mut self, bytes: &[u8], file: &Path, state: &mut State) -> Result<(), ImportError> {
        let format = |e: Malformed| ImportError::Format { file: file.to_path_buf(), why: format!("txn log {e}") };
        let mut c = Cursor::new(bytes);
        if c.be_i32("magic").map_err(format)? != MAGIC {
            return Err(format(Malformed { offset: 0, why: "not a ZooKeeper txn log (magic ZKLG)".into() }));
        }
        c.be_i32("version").map_err(format)?;
        c.be_i64("dbid").map_err(format)?;
        while c.left() >= 12 {
            let at = c.pos();
            let crc = c.be_i64("checksum").map_err(format)?;
            let Some(txn) = c.jute_buffer("txn").map_err(format)? else { break };
            if txn.is_empty() {
                break; // preallocated zeros: the end of the log
            }
            if c.at_end() {
                break; // a partial last record, as ZooKeeper's reader treats it
            }
            if c.u8("end of record").map_err(format)? != EOR {
                return Err(format(Malformed { offset: at, why: "record does not end with 'B'".into() }));
            }
            let mut a = adler2::Adler32::new();
            a.write_slice(txn);
            if i64::from(a.checksum()) != crc {
                return Err(format(Malformed { offset: at, why: format!("record checksum {crc:#x} differs") }));
            }
            let txn = decode(txn).map_err(|e| format(Malformed { offset: at, ..e }))?;
            if txn.zxid > self.after {
                self.apply(state, file, txn)?;
            }
        }
        Ok(())
    }

    /// Decodes one txn (a record's bytes, after its checksum) and applies it: the fuzz
    /// target's way in, past the checksums random bytes never match.
    pub(crate) fn txn(&mut self, bytes: &[u8], file: &Path, state: &mut State) -> Result<(), ImportError> {
        let format = |e: Malformed| ImportError::Format { file: file.to_path_buf(), why: e.to_string() };
        let txn = decode(bytes).map_err(format)?;
        self.apply(state, file, txn)
    }

    fn apply(&mut self, state: &mut State, file: &Path, txn: Decoded) -> Result<(), ImportError> {
        let Decoded { session, zxid, time, changes } = txn;
        let content = |why: String| ImportError::Content { file: file.to_path_buf(), why };
        if zxid < state.zxid() {
            return Err(content(format!("txn {zxid:#x} comes after {:#x}: the log goes backwards", state.zxid())));
        }
        let mut any = false;
        for change in changes {
            let Some(txn) = decided(state, session, change) else {
                self.skipped += 1;
                continue;
            };
            let entry = Entry::foreign(state.last_index() + 1, zxid, time, session, txn);
            state.apply(&entry).map_err(|e| content(format!("txn {zxid:#x}: {e}")))?;
            any = true;
        }
        if any {
            self.applied += 1;
        }
        Ok(())
    }
}

/// One txn: who logged it, its zxid and time, and what it changed.
struct Decoded {
    session: i64,
    zxid: i64,
    time: i64,
    changes: Vec<Change>,
}

/// Header fields and changes of one txn.
fn decode(b: &[u8]) -> Read<Decoded> {
    let mut c = Cursor::new(b);
    let session = c.be_i64("session")?;
    c.be_i32("cxid")?;
    let zxid = c.be_i64("zxid")?;
    let time = c.be_i64("time")?;
    let t = c.be_i32("type")?;
    let changes = if t == ty::MULTI {
        let n = c.be_i32("multi count")?;
        let mut subs = Vec::new();
        for _ in 0..c.count(n.max(0) as u64, 8, "multi")? {
            let st = c.be_i32("sub-txn type")?;
            let body = c.jute_buffer("sub-txn")?.unwrap_or_default();
            subs.push((st, body));
        }
        // A failed multi logs an error txn per op: nothing changed.
        if subs.iter().any(|(st, _)| *st == ty::ERROR) {
            vec![Change::Nothing]
        } else {
            let mut out = Vec::new();
            for (st, body) in subs {
                out.push(change(&mut Cursor::new(body), st, session)?);
            }
            out
        }
    } else {
        vec![change(&mut c, t, session)?]
    };
    // What follows (the TxnDigest of 3.6+) is ZooKeeper's own digest, not compared here.
    Ok(Decoded { session, zxid, time, changes })
}

fn change(c: &mut Cursor<'_>, t: i32, session: i64) -> Read<Change> {
    Ok(match t {
        ty::CREATE | ty::CREATE2 | ty::CREATE_CONTAINER | ty::CREATE_TTL => {
            let path = c.jute_string("path")?;
            let data = c.jute_buffer("data")?.map(<[u8]>::to_vec);
            let acl = acl_vector(c)?;
            let ephemeral = if matches!(t, ty::CREATE | ty::CREATE2) { c.u8("ephemeral")? != 0 } else { false };
            c.be_i32("parentCVersion")?;
            let ttl = if t == ty::CREATE_TTL { c.be_i64("ttl")? } else { 0 };
            let owner = match t {
                ty::CREATE_CONTAINER => CONTAINER_OWNER,
                _ if ephemeral => session,
                _ => 0,
            };
            Change::Create { path, data, acl, owner, ttl }
        }
        ty::DELETE | ty::DELETE_CONTAINER => Change::Delete(c.jute_string("path")?),
        ty::SET_DATA | ty::RECONFIG => {
            let path = c.jute_string("path")?;
            let data = c.jute_buffer("data")?.map(<[u8]>::to_vec);
            Change::SetData { path, data, version: c.be_i32("version")? }
        }
        ty::SET_ACL => {
            let path = c.jute_string("path")?;
            let acl = acl_vector(c)?;
            Change::SetAcl { path, acl, version: c.be_i32("version")? }
        }
        ty::CREATE_SESSION => Change::CreateSession(c.be_i32("timeout")?),
        ty::CLOSE_SESSION => Change::CloseSession,
        ty::CHECK | ty::ERROR => Change::Nothing,
        other => return c.fail(format!("txn type {other} is not one ZooKeeper 3.8 logs")),
    })
}

/// The core's txn for `change` on `state`, or `None` when the state already holds it.
fn decided(state: &State, session: i64, change: Change) -> Option<Txn> {
    let tree = state.tree();
    let op = match change {
        // It took a zxid and changed nothing.
        Change::Nothing => return Some(Txn::Noop),
        Change::CreateSession(timeout_ms) => {
            return (!state.sessions().contains_key(&session)).then_some(Txn::CreateSession {
                id: session,
                timeout_ms,
                passwd: [0; 16],
            });
        }
        Change::CloseSession => {
            let ephemerals = tree.ephemerals_of(session).map(str::to_string).collect();
            return Some(Txn::CloseSession { id: session, ephemerals });
        }
        Change::Create { path, data, acl, owner, ttl } => {
            testkeeper_core::path::validate(&path, state.rules()).ok()?;
            let (parent, _) = testkeeper_core::path::split(&path)?;
            let p = tree.get(parent)?;
            if tree.get(&path).is_some() {
                return None;
            }
            let parent_cversion = p.stat.cversion.wrapping_add(1);
            Op::Create(CreateTxn { path, data, acl: Arc::new(acl), ephemeral_owner: owner, ttl, parent_cversion })
        }
        Change::Delete(path) => {
            let n = tree.get(&path)?;
            if n.num_children() != 0 {
                return None;
            }
            Op::Delete { path }
        }
        Change::SetData { path, data, version } => {
            (tree.get(&path)?.stat.version.wrapping_add(1) == version).then_some(())?;
            Op::SetData { path, data, version }
        }
        Change::SetAcl { path, acl, version } => {
            (tree.get(&path)?.stat.aversion.wrapping_add(1) == version).then_some(())?;
            Op::SetAcl { path, acl: Arc::new(acl), aversion: version }
        }
    };
    Some(Txn::Ops(vec![op]))
}
