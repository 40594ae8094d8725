//! The sled log's keys and values: entry keys that sort by index, and the hard state and
//! metadata records, each sealed with a CRC-32 of its bytes.

use super::super::{HardState, LogError};

pub(super) const META: &[u8] = b"m/meta";
pub(super) const HARD: &[u8] = b"m/hard";

/// The key of the chunk whose first record is `index`: `e` and the index big-endian.
pub(super) fn key(index: u64) -> [u8; 9] {
    let mut k = [b'e'; 9];
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}

pub(super) fn index_of(k: &[u8]) -> u64 {
    u64::from_be_bytes(k[1..9].try_into().expect("entry keys are 9 bytes"))
}

pub(super) fn io(what: &str, e: impl std::fmt::Display) -> LogError {
    LogError::Io { what: format!("{what}: {e}") }
}

/// A value with a CRC-32 of it appended.
pub(super) fn sealed(value: &[u8]) -> Vec<u8> {
    let mut v = value.to_vec();
    v.extend_from_slice(&crc32fast::hash(value).to_le_bytes());
    v
}

/// The value of a sealed record, if its checksum holds.
pub(super) fn unseal(v: &[u8]) -> Option<&[u8]> {
    let (value, crc) = v.split_at(v.len().checked_sub(4)?);
    (crc32fast::hash(value).to_le_bytes() == crc).then_some(value)
}

/// What a data directory was created with, and the choices replay depends on: the flavor and
/// digest setting a state is rebuilt with, the ZooKeeper session-id base, and the system nodes'
/// data of the initial tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub flavor: String,
    pub digest_enabled: bool,
    pub zk_session_base: i64,
    /// Data of `/keeper/feature_flags` and `/keeper/api_version` in the initial tree.
    pub feature_flags: Vec<u8>,
    pub api_version: Vec<u8>,
}

impl Meta {
    const VERSION: u8 = 1;

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = vec![Self::VERSION];
        v.extend_from_slice(&(self.flavor.len() as u32).to_le_bytes());
        v.extend_from_slice(self.flavor.as_bytes());
        v.push(u8::from(self.digest_enabled));
        v.extend_from_slice(&self.zk_session_base.to_le_bytes());
        for b in [&self.feature_flags, &self.api_version] {
            v.extend_from_slice(&(b.len() as u32).to_le_bytes());
            v.extend_from_slice(b);
        }
        v
    }

    pub(super) fn decode(v: &[u8]) -> Option<Meta> {
        let mut r = testkeeper_core::codec::Reader::new(v);
        (r.u8().ok()? == Self::VERSION).then_some(())?;
        let flavor = r.string().ok()?;
        let digest_enabled = r.u8().ok()? != 0;
        let zk_session_base = r.i64().ok()?;
        let feature_flags = r.blob().ok()?.to_vec();
        let api_version = r.blob().ok()?.to_vec();
        r.end().ok()?;
        Some(Meta { flavor, digest_enabled, zk_session_base, feature_flags, api_version })
    }
}

/// The hard state as stored: term, vote, commit (u64 LE each), sealed.
pub(super) fn hard_bytes(h: HardState) -> Vec<u8> {
    let mut b = Vec::with_capacity(24);
    for v in [h.term, h.vote, h.commit] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    sealed(&b)
}

/// The stored hard state, if its checksum holds.
pub(super) fn decode_hard(v: &[u8]) -> Option<HardState> {
    let b = unseal(v).filter(|b| b.len() == 24)?;
    let u = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    Some(HardState { term: u(0), vote: u(8), commit: u(16) })
}
