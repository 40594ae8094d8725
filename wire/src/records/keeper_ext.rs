//! ClickHouse Keeper-only records (opcodes 500..507), laid out as ClickHouse's
//! `ZooKeeperCommon.cpp` writes them (see `docs/research/keeper-ext-wire.md` for sources).
//!
//! createIfNotExists, checkNotExists and tryRemove reuse the standard create/check/delete
//! bodies; the records here are the ones with a layout of their own. Note the one-byte list
//! type and the unsigned 32-bit limits.

use bytes::{BufMut, BytesMut};

use super::stat::Stat;
use crate::error::DecodeError;
use crate::jute::{put_bool, put_str, Decode, Encode, Reader};

/// Body of filteredList (500) and filteredListWithStatsAndData (506).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListRequest {
    pub path: String,
    pub watch: bool,
    /// `ListRequestType`: 0 all, 1 persistent only, 2 ephemeral only (one byte on the wire).
    pub list_type: u8,
    /// Only for 506: return each child's stat.
    pub with_stat: bool,
    /// Only for 506: return each child's data.
    pub with_data: bool,
}

impl ListRequest {
    /// Encodes as filteredList (500) when `extended` is false, else as 506.
    pub fn encode_as(&self, out: &mut BytesMut, extended: bool) {
        put_str(out, &self.path);
        put_bool(out, self.watch);
        out.put_u8(self.list_type);
        if extended {
            put_bool(out, self.with_stat);
            put_bool(out, self.with_data);
        }
    }

    /// Decodes a filteredList (500) body, or a 506 body when `extended`.
    ///
    /// # Errors
    /// Truncated or BadLength.
    pub fn decode_as(r: &mut Reader<'_>, extended: bool) -> Result<ListRequest, DecodeError> {
        let path = r.string("ListRequest.path")?;
        let watch = r.bool("ListRequest.watch")?;
        let list_type = r.u8("ListRequest.type")?;
        let (with_stat, with_data) =
            if extended { (r.bool("ListRequest.withStat")?, r.bool("ListRequest.withData")?) } else { (false, false) };
        Ok(ListRequest { path, watch, list_type, with_stat, with_data })
    }
}

/// Body of listRecursive (507): every descendant of `path`, at most `limit` of them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListRecursiveRequest {
    pub path: String,
    pub limit: u32,
}

impl Encode for ListRecursiveRequest {
    fn encode(&self, out: &mut BytesMut) {
        put_str(out, &self.path);
        out.put_u32(self.limit);
    }
}

impl Decode for ListRecursiveRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ListRecursiveRequest {
            path: r.string("ListRecursiveRequest.path")?,
            limit: r.i32("ListRecursiveRequest.limit")? as u32,
        })
    }
}

/// Body of removeRecursive (503): delete a subtree of at most `limit` nodes, the target included.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveRecursiveRequest {
    pub path: String,
    pub limit: u32,
}

impl Encode for RemoveRecursiveRequest {
    fn encode(&self, out: &mut BytesMut) {
        put_str(out, &self.path);
        out.put_u32(self.limit);
    }
}

impl Decode for RemoveRecursiveRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(RemoveRecursiveRequest {
            path: r.string("RemoveRecursiveRequest.path")?,
            limit: r.i32("RemoveRecursiveRequest.limit")? as u32,
        })
    }
}

record! {
    /// Body of checkStat (504): every stat field that is not -1 must match.
    pub struct CheckStatRequest { path: String [str], version: i32 [i32], stat: Stat [rec] }
}

record! {
    /// Reply to filteredListWithStatsAndData (506): names, the listed node's stat, and per-child
    /// stats and data (empty vectors when not requested).
    pub struct ListWithStatsAndDataResponse {
        names: Vec<String> [vec],
        stat: Stat [rec],
        stats: Vec<Stat> [vec],
        data: Vec<Buffer> [vec],
    }
}

/// A jute `buffer` as a vector item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Buffer(pub Vec<u8>);

impl Encode for Buffer {
    fn encode(&self, out: &mut BytesMut) {
        crate::jute::put_bytes(out, &self.0);
    }
}

impl Decode for Buffer {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.buffer("buffer").map(Buffer)
    }
}

/// `ListRequestType` values.
pub mod list_type {
    pub const ALL: u8 = 0;
    pub const PERSISTENT_ONLY: u8 = 1;
    pub const EPHEMERAL_ONLY: u8 = 2;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn keeper_records_round_trip() {
        for extended in [false, true] {
            let req =
                ListRequest { path: "/".into(), watch: true, list_type: 1, with_stat: extended, with_data: extended };
            let mut out = BytesMut::new();
            req.encode_as(&mut out, extended);
            assert_eq!(out.len(), 4 + 1 + 1 + 1 + if extended { 2 } else { 0 });
            assert_eq!(ListRequest::decode_as(&mut Reader::new(&out), extended).unwrap(), req);
            assert!(ListRequest::decode_as(&mut Reader::new(&out[..out.len() - 1]), extended).is_err());
        }
        check_round_trip(&ListRecursiveRequest { path: "/a".into(), limit: u32::MAX });
        check_round_trip(&RemoveRecursiveRequest { path: "/a".into(), limit: 100 });
        check_round_trip(&CheckStatRequest { path: "/a".into(), version: -1, stat: Stat::default() });
        check_round_trip(&ListWithStatsAndDataResponse {
            names: vec!["a".into()],
            stat: Stat::default(),
            stats: vec![Stat::default()],
            data: vec![Buffer(b"x".to_vec())],
        });
    }
}
