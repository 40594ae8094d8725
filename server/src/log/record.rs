//! One stored log record, little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | CRC-32 (IEEE) of every byte after it |
//! | 1 | record version (1) |
//! | 8 | index |
//! | 8 | term |
//! | 4 | payload length |
//! | n | payload: the entry (`testkeeper_core::codec`) |
//!
//! The checksum covers the header too, so a flipped index is caught like a flipped byte of
//! data. A record cut short is told apart from a record that is whole but wrong: at the end of
//! a log the first is a torn write, anywhere else both are corruption.

use std::fmt;

use testkeeper_core::codec::{decode_entry, encode_entry, ENTRY_VERSION};
use testkeeper_core::txn::Entry;

/// Bytes before the payload.
pub const HEADER: usize = 4 + 1 + 8 + 8 + 4;

/// Why bytes are not a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer bytes than the header or its length say (a torn write, if at the end).
    Short {
        have: usize,
        need: usize,
    },
    Checksum {
        stored: u32,
        computed: u32,
    },
    Version(u8),
    Payload(String),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Short { have, need } => write!(f, "record cut short: {have} of {need} bytes"),
            RecordError::Checksum { stored, computed } => {
                write!(f, "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
            RecordError::Version(v) => write!(f, "unknown record version {v}"),
            RecordError::Payload(why) => write!(f, "payload does not decode: {why}"),
        }
    }
}

/// Appends `e` as one record.
pub fn encode(e: &Entry, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(ENTRY_VERSION);
    out.extend_from_slice(&e.index().to_le_bytes());
    out.extend_from_slice(&e.term().to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    let payload = out.len();
    encode_entry(e, out);
    let len = (out.len() - payload) as u32;
    out[payload - 4..payload].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The index a record says it holds, read before its checksum is checked (for messages).
pub fn claimed_index(buf: &[u8]) -> Option<u64> {
    buf.get(5..13).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// How many bytes the record at the start of `buf` says it takes, if its header is there.
pub fn extent(buf: &[u8]) -> Option<usize> {
    let len = buf.get(21..25)?;
    Some(HEADER + u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize)
}

/// Whether a whole record holding `index` starts somewhere in `buf` after the first header:
/// then the record at the start of `buf` was not the last one written, whatever its length
/// field says (a damaged length that reaches past the end looks like a torn write otherwise).
/// Only a failed record pays for this scan.
pub fn whole_record_follows(buf: &[u8], index: u64) -> bool {
    (HEADER..buf.len()).any(|p| claimed_index(&buf[p..]) == Some(index) && decode(&buf[p..]).is_ok())
}

/// Reads the record at the start of `buf`; returns it and the bytes it took.
///
/// # Errors
/// A record cut short, a checksum or version that does not match, or a bad payload.
pub fn decode(buf: &[u8]) -> Result<(Entry, usize), RecordError> {
    if buf.len() < HEADER {
        return Err(RecordError::Short { have: buf.len(), need: HEADER });
    }
    let len = u32::from_le_bytes(buf[21..25].try_into().expect("4 bytes")) as usize;
    let total = HEADER + len;
    if buf.len() < total {
        return Err(RecordError::Short { have: buf.len(), need: total });
    }
    let stored = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes"));
    let computed = crc32fast::hash(&buf[4..total]);
    if stored != computed {
        return Err(RecordError::Checksum { stored, computed });
    }
    if buf[4] != ENTRY_VERSION {
        return Err(RecordError::Version(buf[4]));
    }
    let index = u64::from_le_bytes(buf[5..13].try_into().expect("8 bytes"));
    let term = u64::from_le_bytes(buf[13..21].try_into().expect("8 bytes"));
    let entry = decode_entry(index, term, &buf[HEADER..total]).map_err(|e| RecordError::Payload(e.0))?;
    Ok((entry, total))
}
