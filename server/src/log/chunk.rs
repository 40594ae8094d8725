//! Runs of consecutive log records, the unit the sled log stores: one sled value holds the
//! records of one append (or of several, when the syncer writes what piled up during a flush),
//! under the key of the first index in it.
//!
//! Why not one sled key per record: sled's cost is per key (a page delta each), and a flush
//! cycle that covers 32 sessions' writes spent more time inserting 32 keys than flushing them.
//! Records keep their own framing and checksum (`record`), so a chunk is just records back to
//! back, and a chunk of one record is exactly what one key held before.

use testkeeper_core::txn::Entry;

use super::record::{self, RecordError};

/// A chunk is closed once it holds this many bytes, and the next record starts another.
/// Below sled 0.34's blob threshold (a quarter of its 512 KiB segment), over which a value is
/// written to a file of its own and fsynced separately.
pub const MAX_BYTES: usize = 64 * 1024;

/// Records appended but not yet written into the database, as the chunks they will be.
#[derive(Debug, Default)]
pub struct Staged {
    /// (first index, records back to back), in index order.
    pub chunks: Vec<(u64, Vec<u8>)>,
}

impl Staged {
    /// Adds `e`, which must follow the last staged record.
    pub fn push(&mut self, e: &Entry) {
        match self.chunks.last_mut() {
            Some((first, bytes)) if bytes.len() < MAX_BYTES => {
                debug_assert_eq!(*first + count(bytes), e.index(), "staged records are contiguous");
                record::encode(e, bytes);
            }
            _ => {
                let mut bytes = Vec::with_capacity(1024);
                record::encode(e, &mut bytes);
                self.chunks.push((e.index(), bytes));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

/// How many records a chunk holds (headers only; nothing is verified).
fn count(bytes: &[u8]) -> u64 {
    let mut n = 0;
    let mut at = 0;
    while let Some(len) = record::extent(&bytes[at..]) {
        at += len;
        n += 1;
        if at >= bytes.len() {
            break;
        }
    }
    n
}

/// Why a chunk does not read back: the index of the bad record, its byte offset in the chunk,
/// and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    pub index: u64,
    pub offset: usize,
    pub why: ChunkError,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkError {
    Record(RecordError),
    /// A whole record that says it holds another index than its place in the chunk.
    Misplaced {
        claims: u64,
    },
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkError::Record(r) => r.fmt(f),
            ChunkError::Misplaced { claims } => write!(f, "the record says {claims}"),
        }
    }
}

impl BadRecord {
    /// Whether this is the chunk's last record, cut short or failing its checksum: at the end
    /// of the log, a torn write.
    pub fn torn_at_end(&self, chunk: &[u8]) -> bool {
        let whole_to_end = record::extent(&chunk[self.offset..]).is_none_or(|n| self.offset + n >= chunk.len());
        matches!(self.why, ChunkError::Record(RecordError::Short { .. } | RecordError::Checksum { .. })) && whole_to_end
    }
}

/// Decodes the records of the chunk stored under `first` whose indexes lie in `from..to`,
/// into `out`; records before `from` are skipped by their headers, unverified. Returns the
/// index after the last record walked (the chunk's end when `to` lies beyond it).
///
/// # Errors
/// The first record in range that does not verify or does not hold its place's index.
pub fn decode(first: u64, chunk: &[u8], from: u64, to: u64, out: &mut Vec<Entry>) -> Result<u64, BadRecord> {
    let (mut at, mut index) = (0, first);
    while at < chunk.len() && index < to {
        if index < from {
            match record::extent(&chunk[at..]) {
                Some(n) if at + n <= chunk.len() => {
                    at += n;
                    index += 1;
                    continue;
                }
                // A header that does not fit is read as a record, so the error says why.
                _ => {}
            }
        }
        match record::decode(&chunk[at..]) {
            Ok((e, n)) if e.index() == index => {
                out.push(e);
                at += n;
                index += 1;
            }
            Ok((e, _)) => {
                return Err(BadRecord { index, offset: at, why: ChunkError::Misplaced { claims: e.index() } })
            }
            Err(why) => return Err(BadRecord { index, offset: at, why: ChunkError::Record(why) }),
        }
    }
    Ok(index)
}

/// The first `keep` records of `chunk` (whole records, by their headers).
pub fn prefix(chunk: &[u8], keep: u64) -> &[u8] {
    let mut at = 0;
    for _ in 0..keep {
        match record::extent(&chunk[at..]) {
            Some(n) if at + n <= chunk.len() => at += n,
            _ => break,
        }
    }
    &chunk[..at]
}

#[cfg(test)]
mod tests {
    use testkeeper_core::txn::Entry;

    use super::*;

    fn entry(index: u64) -> Entry {
        Entry::noop(index, 1)
    }

    fn staged(from: u64, to: u64) -> Staged {
        let mut s = Staged::default();
        for i in from..to {
            s.push(&entry(i));
        }
        s
    }

    #[test]
    fn staged_records_split_into_chunks_of_bounded_size_that_read_back_in_order() {
        let s = staged(7, 7 + 5000);
        assert!(s.chunks.len() > 1, "5000 records make more than one chunk");
        let mut next = 7;
        for (first, bytes) in &s.chunks {
            assert_eq!(*first, next);
            assert!(bytes.len() < MAX_BYTES + 200);
            let mut out = Vec::new();
            next = decode(*first, bytes, 0, u64::MAX, &mut out).unwrap();
            assert_eq!(out.iter().map(Entry::index).collect::<Vec<_>>(), (*first..next).collect::<Vec<_>>());
        }
        assert_eq!(next, 7 + 5000);
    }

    #[test]
    fn a_range_skips_records_before_it_and_stops_at_its_end() {
        let s = staged(10, 20);
        let (first, bytes) = &s.chunks[0];
        let mut out = Vec::new();
        assert_eq!(decode(*first, bytes, 13, 16, &mut out).unwrap(), 16);
        assert_eq!(out.iter().map(Entry::index).collect::<Vec<_>>(), vec![13, 14, 15]);
        assert_eq!(count(prefix(bytes, 4)), 4);
        assert_eq!(prefix(bytes, 100), &bytes[..]);
    }

    #[test]
    fn damage_names_the_record_and_only_the_last_one_counts_as_torn() {
        let s = staged(1, 4);
        let bytes = &s.chunks[0].1;
        let one = prefix(bytes, 1).len();
        // A flipped byte in the second record: corrupt, not torn (a record follows).
        let mut flipped = bytes.clone();
        flipped[one + 30] ^= 1;
        let bad = decode(1, &flipped, 0, u64::MAX, &mut Vec::new()).unwrap_err();
        assert_eq!((bad.index, bad.offset), (2, one));
        assert!(matches!(bad.why, ChunkError::Record(RecordError::Checksum { .. })));
        assert!(!bad.torn_at_end(&flipped));
        // The last record cut short: torn.
        let cut = &bytes[..bytes.len() - 3];
        let bad = decode(1, cut, 0, u64::MAX, &mut Vec::new()).unwrap_err();
        assert_eq!(bad.index, 3);
        assert!(bad.torn_at_end(cut));
        // A record at another record's place.
        let bad = decode(5, bytes, 0, u64::MAX, &mut Vec::new()).unwrap_err();
        assert_eq!(bad.why, ChunkError::Misplaced { claims: 1 });
    }
}
