//! A bounds-checked reader over foreign bytes: little-endian fields and LEB128 lengths for
//! ClickHouse's `readBinary`, big-endian fields and i32 lengths for ZooKeeper's jute. Every
//! read past the end, and every length that cannot fit what is left, is an error naming the
//! field and the offset, never a panic or an allocation the input chose.

/// Why the bytes ran out or made no sense, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub offset: usize,
    pub why: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.why)
    }
}

pub type Read<T> = Result<T, Malformed>;

pub struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(b: &'a [u8]) -> Cursor<'a> {
        Cursor { b, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn left(&self) -> usize {
        self.b.len() - self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.b.len()
    }

    pub fn fail<T>(&self, why: impl Into<String>) -> Read<T> {
        Err(Malformed { offset: self.pos, why: why.into() })
    }

    pub fn take(&mut self, n: usize, what: &str) -> Read<&'a [u8]> {
        if n > self.left() {
            return self.fail(format!("{what}: {n} bytes wanted, {} left", self.left()));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Read<[u8; N]> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }

    pub fn u8(&mut self, what: &str) -> Read<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub fn le_i32(&mut self, what: &str) -> Read<i32> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    pub fn le_i64(&mut self, what: &str) -> Read<i64> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    pub fn le_u64(&mut self, what: &str) -> Read<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub fn be_i32(&mut self, what: &str) -> Read<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub fn be_i64(&mut self, what: &str) -> Read<i64> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// ClickHouse's `readVarUInt`: LEB128, at most 9 bytes (the 9th carries 8 bits).
    pub fn varuint(&mut self, what: &str) -> Read<u64> {
        let mut v = 0u64;
        for i in 0..9 {
            let b = self.u8(what)?;
            if i == 8 {
                return Ok(v | (u64::from(b) << 56));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        unreachable!("the ninth byte returns")
    }

    /// A count of items each at least `min` bytes long: refused when the rest cannot hold it.
    pub fn count(&mut self, n: u64, min: usize, what: &str) -> Read<usize> {
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min.max(1)) <= self.left() => Ok(n),
            _ => self.fail(format!("{what}: {n} items cannot fit in {} bytes", self.left())),
        }
    }

    /// ClickHouse's `readBinary(String)`: a varuint length, then the bytes.
    pub fn ch_bytes(&mut self, what: &str) -> Read<&'a [u8]> {
        let n = self.varuint(what)?;
        let n = self.count(n, 1, what)?;
        self.take(n, what)
    }

    /// jute's `readBuffer`: an i32 length (-1 = null), then the bytes.
    pub fn jute_buffer(&mut self, what: &str) -> Read<Option<&'a [u8]>> {
        match self.be_i32(what)? {
            -1 => Ok(None),
            n if n < 0 => self.fail(format!("{what}: length {n}")),
            n => Ok(Some(self.take(n as usize, what)?)),
        }
    }

    /// jute's `readString`: a buffer holding UTF-8 (null read as empty).
    pub fn jute_string(&mut self, what: &str) -> Read<String> {
        let at = self.pos;
        let b = self.jute_buffer(what)?.unwrap_or_default();
        String::from_utf8(b.to_vec()).map_err(|_| Malformed { offset: at, why: format!("{what}: not UTF-8") })
    }
}

/// Text of foreign bytes meant as a path or an ACL field.
pub fn utf8(b: &[u8], at: usize, what: &str) -> Read<String> {
    String::from_utf8(b.to_vec()).map_err(|_| Malformed { offset: at, why: format!("{what}: not UTF-8") })
}

/// The little-endian writer the Keeper snapshot export uses.
#[derive(Default)]
pub struct LeWriter(pub Vec<u8>);

impl LeWriter {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn varuint(&mut self, mut v: u64) {
        for _ in 0..8 {
            if v < 0x80 {
                self.0.push(v as u8);
                return;
            }
            self.0.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.varuint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varuint_round_trips_and_matches_leb128() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX >> 1, u64::MAX] {
            let mut w = LeWriter::default();
            w.varuint(v);
            assert!(w.0.len() <= 9);
            assert_eq!(Cursor::new(&w.0).varuint("v").unwrap(), v, "{v}");
        }
        let mut w = LeWriter::default();
        w.varuint(300);
        assert_eq!(w.0, [0xac, 0x02]);
    }

    #[test]
    fn lengths_past_the_end_are_errors_not_allocations() {
        let mut c = Cursor::new(&[0xff, 0xff, 0xff, 0x7f]);
        assert!(c.jute_buffer("data").is_err());
        let mut c = Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(c.ch_bytes("path").is_err());
        assert!(Cursor::new(&[]).le_i64("zxid").is_err());
    }
}
