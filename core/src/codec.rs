//! The byte encoding of an entry's payload (everything but its index and term, which the log
//! record carries): little-endian, tagged, versioned by the record that holds it. Decoding
//! rejects anything it cannot account for byte by byte. docs/persistence.md spells the format
//! out; a change to it is a new record version.

use std::fmt;
use std::sync::Arc;

use testkeeper_wire::{Acl, Id, ZkError};

use crate::node::AclList;
use crate::txn::{CreateTxn, Entry, Op, Txn};

/// The payload version this code writes (the record header carries it).
pub const ENTRY_VERSION: u8 = 1;

/// A payload that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CodecError {}

/// Little-endian writer.
#[derive(Debug, Default)]
pub struct Writer<'a> {
    out: Option<&'a mut Vec<u8>>,
}

impl<'a> Writer<'a> {
    /// Appends to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Writer<'a> {
        Writer { out: Some(out) }
    }

    fn bytes(&mut self, b: &[u8]) {
        if let Some(o) = self.out.as_deref_mut() {
            o.extend_from_slice(b);
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }

    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }

    /// A length-prefixed byte string.
    pub fn blob(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.bytes(b);
    }

    pub fn str(&mut self, s: &str) {
        self.blob(s.as_bytes());
    }

    /// Data that may be null: length -1 for null.
    pub fn data(&mut self, d: Option<&[u8]>) {
        match d {
            None => self.i32(-1),
            Some(b) => {
                self.i32(b.len() as i32);
                self.bytes(b);
            }
        }
    }

    pub fn acl(&mut self, acl: &[Acl]) {
        self.u32(acl.len() as u32);
        for a in acl {
            self.i32(a.perms);
            self.str(&a.id.scheme);
            self.str(&a.id.id);
        }
    }
}

/// Little-endian reader over an exact slice.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.buf.len() < n {
            return Err(CodecError(format!("{n} bytes wanted, {} left", self.buf.len())));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32, CodecError> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, CodecError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// 16 raw bytes (a session password).
    pub fn array16(&mut self) -> Result<[u8; 16], CodecError> {
        self.array()
    }

    pub fn blob(&mut self) -> Result<&'a [u8], CodecError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    pub fn string(&mut self) -> Result<String, CodecError> {
        String::from_utf8(self.blob()?.to_vec()).map_err(|_| CodecError("a string is not UTF-8".into()))
    }

    pub fn data(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        match self.i32()? {
            -1 => Ok(None),
            n if n < 0 => Err(CodecError(format!("data length {n}"))),
            n => Ok(Some(self.take(n as usize)?.to_vec())),
        }
    }

    pub fn acl(&mut self) -> Result<Vec<Acl>, CodecError> {
        let n = self.count(9)?;
        (0..n).map(|_| Ok(Acl { perms: self.i32()?, id: Id { scheme: self.string()?, id: self.string()? } })).collect()
    }

    /// A count of items of at least `min` bytes each, checked against what is left so a
    /// corrupt count cannot ask for a huge allocation.
    pub fn count(&mut self, min: usize) -> Result<usize, CodecError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min) > self.buf.len() {
            return Err(CodecError(format!("count {n} exceeds the {} bytes left", self.buf.len())));
        }
        Ok(n)
    }

    /// Fails unless everything was read.
    pub fn end(&self) -> Result<(), CodecError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(CodecError(format!("{} trailing bytes", self.buf.len())))
        }
    }
}

/// Writes the payload of `e` (not its index or term).
pub fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    let mut w = Writer::new(out);
    w.i64(e.zxid);
    w.i64(e.time_ms);
    w.i64(e.session);
    match e.digest {
        None => w.u8(0),
        Some((v, d)) => {
            w.u8(v);
            w.u64(d);
        }
    }
    match &e.txn {
        Txn::Ops(ops) => {
            w.u8(1);
            w.u32(ops.len() as u32);
            for op in ops {
                encode_op(&mut w, op);
            }
        }
        Txn::Failed(err) => {
            w.u8(2);
            w.i32(err.code());
        }
        Txn::MultiFailed(codes) => {
            w.u8(3);
            w.u32(codes.len() as u32);
            codes.iter().for_each(|c| w.i32(*c));
        }
        Txn::CreateSession { id, timeout_ms, passwd } => {
            w.u8(4);
            w.i64(*id);
            w.i32(*timeout_ms);
            passwd.iter().for_each(|b| w.u8(*b));
        }
        Txn::CloseSession { id, ephemerals } => {
            w.u8(5);
            w.i64(*id);
            w.u32(ephemerals.len() as u32);
            ephemerals.iter().for_each(|p| w.str(p));
        }
        Txn::Noop => w.u8(6),
    }
    w.u64(e.origin);
}

fn encode_op(w: &mut Writer<'_>, op: &Op) {
    match op {
        Op::Create(c) => {
            w.u8(1);
            w.str(&c.path);
            w.data(c.data.as_deref());
            w.acl(&c.acl);
            w.i64(c.ephemeral_owner);
            w.i64(c.ttl);
            w.i32(c.parent_cversion);
        }
        Op::Delete { path } => {
            w.u8(2);
            w.str(path);
        }
        Op::DeleteMany { paths } => {
            w.u8(3);
            w.u32(paths.len() as u32);
            paths.iter().for_each(|p| w.str(p));
        }
        Op::SetData { path, data, version } => {
            w.u8(4);
            w.str(path);
            w.data(data.as_deref());
            w.i32(*version);
        }
        Op::SetAcl { path, acl, aversion } => {
            w.u8(5);
            w.str(path);
            w.acl(acl);
            w.i32(*aversion);
        }
        Op::Check { path } => {
            w.u8(6);
            w.str(path);
        }
        Op::Nothing { path } => {
            w.u8(7);
            w.str(path);
        }
    }
}

/// Reads an entry's payload; `index` and `term` come from its record.
///
/// # Errors
/// Any byte that does not fit the format, trailing bytes included.
pub fn decode_entry(index: u64, term: u64, payload: &[u8]) -> Result<Entry, CodecError> {
    let mut r = Reader::new(payload);
    let (zxid, time_ms, session) = (r.i64()?, r.i64()?, r.i64()?);
    let digest = match r.u8()? {
        0 => None,
        v => Some((v, r.u64()?)),
    };
    let txn = match r.u8()? {
        1 => {
            let n = r.count(5)?;
            Txn::Ops((0..n).map(|_| decode_op(&mut r)).collect::<Result<_, _>>()?)
        }
        2 => {
            let code = r.i32()?;
            Txn::Failed(ZkError::from_code(code).ok_or_else(|| CodecError(format!("unknown error code {code}")))?)
        }
        3 => {
            let n = r.count(4)?;
            Txn::MultiFailed((0..n).map(|_| r.i32()).collect::<Result<_, _>>()?)
        }
        4 => Txn::CreateSession { id: r.i64()?, timeout_ms: r.i32()?, passwd: r.array16()? },
        5 => {
            let id = r.i64()?;
            let n = r.count(4)?;
            Txn::CloseSession { id, ephemerals: (0..n).map(|_| r.string()).collect::<Result<_, _>>()? }
        }
        6 => Txn::Noop,
        t => return Err(CodecError(format!("unknown txn tag {t}"))),
    };
    let origin = r.u64()?;
    r.end()?;
    Ok(Entry { index, term, zxid, time_ms, session, txn, digest, origin })
}

fn decode_op(r: &mut Reader<'_>) -> Result<Op, CodecError> {
    Ok(match r.u8()? {
        1 => Op::Create(CreateTxn {
            path: r.string()?,
            data: r.data()?,
            acl: Arc::new(r.acl()?) as AclList,
            ephemeral_owner: r.i64()?,
            ttl: r.i64()?,
            parent_cversion: r.i32()?,
        }),
        2 => Op::Delete { path: r.string()? },
        3 => {
            let n = r.count(4)?;
            Op::DeleteMany { paths: (0..n).map(|_| r.string()).collect::<Result<_, _>>()? }
        }
        4 => Op::SetData { path: r.string()?, data: r.data()?, version: r.i32()? },
        5 => Op::SetAcl { path: r.string()?, acl: Arc::new(r.acl()?), aversion: r.i32()? },
        6 => Op::Check { path: r.string()? },
        7 => Op::Nothing { path: r.string()? },
        t => return Err(CodecError(format!("unknown op tag {t}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flavor::Flavor;
    use crate::propose::Decide;
    use crate::testutil::*;
    use testkeeper_wire::Request;

    #[test]
    fn every_txn_kind_round_trips_and_every_truncation_fails() {
        let mut h = Harness::new(Flavor::Zookeeper);
        let s = h.session();
        let reqs = [
            create("/a", b"x", 0),
            create("/a/e", b"", 1),
            set("/a", b"yz", -1),
            create("/a", b"", 0),
            Request::Multi(vec![create("/b", b"", 0), delete("/nope", -1)]),
            Request::Multi(vec![create("/b", b"", 2), set("/a", b"", 1), delete("/a/e", 0)]),
        ];
        for r in &reqs {
            h.write(s, r);
        }
        h.run(s, Decide::CloseSession { id: s });
        for e in &h.log {
            let mut buf = Vec::new();
            encode_entry(e, &mut buf);
            assert_eq!(decode_entry(e.index, e.term, &buf).as_ref(), Ok(e));
            for cut in 0..buf.len() {
                assert!(decode_entry(e.index, e.term, &buf[..cut]).is_err(), "cut at {cut} of {e:?}");
            }
            buf.push(0);
            assert!(decode_entry(e.index, e.term, &buf).is_err(), "a trailing byte is refused");
        }
    }
}
