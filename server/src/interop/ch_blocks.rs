//! ClickHouse's compressed block stream (`CompressedWriteBuffer`), which Keeper writes its
//! snapshots in when `compress_snapshots_with_zstd_format` is off. Each block: a 16-byte
//! CityHash128 (v1.0.2) of the rest, a method byte, the block's size with its 9-byte header
//! and the decompressed size (u32 LE each), then the payload: LZ4 (0x82), ZSTD (0x90) or
//! stored as is (0x02). Source: ClickHouse `src/Compression/CompressedReadBufferBase.cpp`,
//! `CompressionInfo.h`.

use super::cursor::Malformed;

const LZ4: u8 = 0x82;
const ZSTD: u8 = 0x90;
const NONE: u8 = 0x02;
/// A block larger than ClickHouse itself would write (1 GiB) is refused before allocating.
const MAX_BLOCK: u32 = 1 << 30;

/// Stored checksum bytes: ClickHouse writes CityHash's first half (the high 64 bits of
/// cityhash-rs's u128) first, both halves little-endian.
fn checksum(block: &[u8]) -> [u8; 16] {
    cityhash_rs::cityhash_102_128(block).rotate_left(64).to_le_bytes()
}

/// True when `b` starts like a block stream (a known method after the checksum).
pub fn looks_like(b: &[u8]) -> bool {
    b.len() >= 25 && matches!(b[16], LZ4 | ZSTD | NONE)
}

/// Decodes a whole block stream, checking every block's checksum.
///
/// # Errors
/// A checksum that differs, an unknown method, a size that does not fit, a payload that does
/// not decompress to its stated size; each names the block's offset.
pub fn decode(mut b: &[u8]) -> Result<Vec<u8>, Malformed> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    while !b.is_empty() {
        if b.len() < 25 {
            return Err(Malformed { offset, why: format!("{} bytes, shorter than a block header", b.len()) });
        }
        let method = b[16];
        let size = u32::from_le_bytes(b[17..21].try_into().expect("4 bytes"));
        let plain = u32::from_le_bytes(b[21..25].try_into().expect("4 bytes"));
        if !(9..=MAX_BLOCK).contains(&size) || plain > MAX_BLOCK || 16 + size as usize > b.len() {
            return Err(Malformed { offset, why: format!("block size {size} (decompressed {plain}) does not fit") });
        }
        let block = &b[16..16 + size as usize];
        if b[..16] != checksum(block) {
            return Err(Malformed { offset, why: "block checksum differs (CityHash128 v1.0.2)".into() });
        }
        let payload = &block[9..];
        let bad = |why: String| Malformed { offset, why };
        // The decompressed size is allocated up front: hold it to what the payload can expand
        // to (LZ4 at most 255 to 1; stored blocks 1 to 1), so a short block cannot ask for a GiB.
        let most = match method {
            NONE => payload.len() as u64,
            LZ4 => payload.len() as u64 * 255 + 16,
            _ => u64::from(MAX_BLOCK),
        };
        if u64::from(plain) > most {
            return Err(bad(format!("{plain} bytes cannot come out of a {}-byte payload", payload.len())));
        }
        let data = match method {
            NONE => payload.to_vec(),
            LZ4 => lz4_flex::block::decompress(payload, plain as usize).map_err(|e| bad(format!("LZ4: {e}")))?,
            ZSTD => zstd::bulk::decompress(payload, plain as usize).map_err(|e| bad(format!("ZSTD: {e}")))?,
            m => return Err(bad(format!("compression method {m:#04x} is not LZ4, ZSTD or none"))),
        };
        if data.len() != plain as usize {
            return Err(bad(format!("{} bytes decompressed, the header says {plain}", data.len())));
        }
        out.extend_from_slice(&data);
        b = &b[16 + size as usize..];
        offset += 16 + size as usize;
    }
    Ok(out)
}

#[cfg(test)]
/// Encodes `data` as one LZ4 block per MiB (what `CompressedWriteBuffer` writes by default).
pub fn encode_lz4(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in data.chunks(1 << 20) {
        let payload = lz4_flex::block::compress(chunk);
        let mut block = Vec::with_capacity(9 + payload.len());
        block.push(LZ4);
        block.extend_from_slice(&((9 + payload.len()) as u32).to_le_bytes());
        block.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        block.extend_from_slice(&payload);
        out.extend_from_slice(&checksum(&block));
        out.extend_from_slice(&block);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_and_a_flipped_byte_is_refused() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let enc = encode_lz4(&data);
        assert!(looks_like(&enc));
        assert_eq!(decode(&enc).unwrap(), data);
        for i in [0, 16, 17, 30, enc.len() - 1] {
            let mut bad = enc.clone();
            bad[i] ^= 1;
            assert!(decode(&bad).is_err(), "byte {i}");
        }
        assert!(decode(&enc[..enc.len() - 1]).is_err());
    }
}
