//! Jute primitives: the big-endian encoding every ZooKeeper record is built from.
//!
//! `int` is i32 BE, `long` i64 BE, `boolean` one byte, `buffer`/`ustring` an i32 length
//! (-1 = null) followed by the bytes, `vector` an i32 count (-1 = null) followed by the items.
//! Decoding works on the exact slice of one frame: running out of bytes is a
//! [`DecodeError::Truncated`], never "need more", and every length is checked against the bytes
//! actually left before anything is allocated.

use bytes::{BufMut, BytesMut};
use nom::number::complete::{be_i32, be_i64, be_u8};

use crate::error::DecodeError;

/// A record that can be written in jute encoding.
pub trait Encode {
    /// Appends the record's encoding to `out`.
    fn encode(&self, out: &mut BytesMut);

    /// The encoding as a fresh buffer (tests, one-off frames).
    fn to_bytes(&self) -> BytesMut {
        let mut out = BytesMut::new();
        self.encode(&mut out);
        out
    }
}

/// A record that can be read from jute encoding.
pub trait Decode: Sized {
    /// Reads one record from the front of `r`.
    ///
    /// # Errors
    /// [`DecodeError`] when the bytes are short or malformed.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decodes a record that must fill `bytes` exactly.
    ///
    /// # Errors
    /// [`DecodeError`] when the bytes are short, malformed, or longer than the record.
    fn decode_exact(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let v = Self::decode(&mut r)?;
        if !r.is_empty() {
            return Err(DecodeError::Malformed("trailing bytes after record"));
        }
        Ok(v)
    }
}

/// A cursor over the exact bytes of one frame.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    /// What [`string`](Self::string) does with bytes that are not UTF-8 (`rawstr`).
    invalid: crate::rawstr::Invalid,
}

fn short<T>(_: nom::Err<nom::error::Error<&[u8]>>, what: &'static str) -> Result<T, DecodeError> {
    Err(DecodeError::Truncated(what))
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, invalid: crate::rawstr::Invalid::Escape }
    }

    /// A reader over `buf` whose strings treat bytes that are not UTF-8 as `invalid` says
    /// (the zookeeper flavor reads its clients' requests with `Replace`).
    pub fn with_invalid(buf: &'a [u8], invalid: crate::rawstr::Invalid) -> Self {
        Reader { buf, invalid }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Reads an `int`.
    ///
    /// # Errors
    /// Truncated when fewer than 4 bytes are left.
    pub fn i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        match be_i32(self.buf) {
            Ok((rest, v)) => {
                self.buf = rest;
                Ok(v)
            }
            Err(e) => short(e, what),
        }
    }

    /// Reads a `long`.
    ///
    /// # Errors
    /// Truncated when fewer than 8 bytes are left.
    pub fn i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        match be_i64(self.buf) {
            Ok((rest, v)) => {
                self.buf = rest;
                Ok(v)
            }
            Err(e) => short(e, what),
        }
    }

    /// Reads a `boolean` (any non-zero byte is true, as Java's `readBoolean`).
    ///
    /// # Errors
    /// Truncated when no byte is left.
    pub fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        match be_u8(self.buf) {
            Ok((rest, v)) => {
                self.buf = rest;
                Ok(v != 0)
            }
            Err(e) => short(e, what),
        }
    }

    /// Reads one unsigned byte (Keeper's `uint8` fields).
    ///
    /// # Errors
    /// Truncated when no byte is left.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        match be_u8(self.buf) {
            Ok((rest, v)) => {
                self.buf = rest;
                Ok(v)
            }
            Err(e) => short(e, what),
        }
    }

    fn len_prefixed(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.i32(what)?;
        if len == -1 {
            return Ok(&[]);
        }
        if len < 0 {
            return Err(DecodeError::BadLength { what, len: len.into() });
        }
        let len = len as usize;
        if len > self.buf.len() {
            return Err(DecodeError::Truncated(what));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    /// Reads a `buffer`; null reads as empty.
    ///
    /// # Errors
    /// Truncated or BadLength.
    pub fn buffer(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        self.len_prefixed(what).map(<[u8]>::to_vec)
    }

    /// Reads a `buffer`, keeping null (-1) apart from empty: ZooKeeper stores and returns null
    /// data as null.
    ///
    /// # Errors
    /// Truncated or BadLength.
    pub fn opt_buffer(&mut self, what: &'static str) -> Result<Option<Vec<u8>>, DecodeError> {
        if self.buf.len() >= 4 && self.buf[..4] == [0xff, 0xff, 0xff, 0xff] {
            self.buf = &self.buf[4..];
            return Ok(None);
        }
        self.buffer(what).map(Some)
    }

    /// Reads a `ustring`; null reads as empty. Bytes that are not UTF-8 are kept as escapes
    /// (`rawstr`: Keeper keeps a path's bytes as they are), or, in a reader made with
    /// `Invalid::Replace`, become U+FFFD as jute's Java reader (`new String(bytes, UTF_8)`)
    /// makes them: ZooKeeper then answers a read of such a path NONODE and refuses to create
    /// it (BADARGUMENTS: U+FFFD is outside `PathUtils.validatePath`'s range) instead of
    /// failing the request.
    ///
    /// # Errors
    /// Truncated or BadLength.
    pub fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let raw = self.len_prefixed(what)?;
        Ok(crate::rawstr::decode(raw, self.invalid))
    }

    /// Reads a `vector<T>`; null reads as empty.
    ///
    /// # Errors
    /// Truncated, BadLength, or any error of the items.
    pub fn vec<T: Decode>(&mut self, what: &'static str) -> Result<Vec<T>, DecodeError> {
        let n = self.i32(what)?;
        if n == -1 {
            return Ok(Vec::new());
        }
        // Every jute item takes at least one byte, so a count beyond the bytes left is a lie:
        // reject it before reserving memory for it.
        if n < 0 || n as usize > self.buf.len() {
            return Err(DecodeError::BadLength { what, len: n.into() });
        }
        // Reserve for at most a few thousand items up front: a count is only a claim until the
        // items decode, and a 1 MiB frame could otherwise make us reserve tens of MB.
        let mut out = Vec::with_capacity((n as usize).min(4096));
        for _ in 0..n {
            out.push(T::decode(self)?);
        }
        Ok(out)
    }
}

/// Writes an `int`.
pub fn put_i32(out: &mut BytesMut, v: i32) {
    out.put_i32(v);
}

/// Writes a `long`.
pub fn put_i64(out: &mut BytesMut, v: i64) {
    out.put_i64(v);
}

/// Writes a `boolean`.
pub fn put_bool(out: &mut BytesMut, v: bool) {
    out.put_u8(u8::from(v));
}

/// Writes a `buffer` (or `ustring`).
pub fn put_bytes(out: &mut BytesMut, v: &[u8]) {
    out.put_i32(v.len() as i32);
    out.put_slice(v);
}

/// Writes a `buffer` that may be null (length -1).
pub fn put_opt_bytes(out: &mut BytesMut, v: Option<&[u8]>) {
    match v {
        Some(b) => put_bytes(out, b),
        None => out.put_i32(-1),
    }
}

/// Writes a `ustring`: the bytes it stands for (an escape as its raw byte, `rawstr`).
pub fn put_str(out: &mut BytesMut, v: &str) {
    put_bytes(out, &crate::rawstr::raw_bytes(v));
}

/// Writes a `vector<T>`.
pub fn put_vec<T: Encode>(out: &mut BytesMut, v: &[T]) {
    out.put_i32(v.len() as i32);
    for item in v {
        item.encode(out);
    }
}

impl Encode for String {
    fn encode(&self, out: &mut BytesMut) {
        put_str(out, self);
    }
}

impl Decode for String {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.string("string")
    }
}

/// Test helpers shared by every record module: round trip, and "one byte short".
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use std::fmt::Debug;

    /// Encodes, decodes back, and checks every strict prefix fails as truncated or malformed.
    pub fn check_round_trip<T: Encode + Decode + PartialEq + Debug>(v: &T) {
        let bytes = v.to_bytes();
        let back = T::decode_exact(&bytes).expect("round trip decodes");
        assert_eq!(&back, v);
        if !bytes.is_empty() {
            let short = &bytes[..bytes.len() - 1];
            assert!(T::decode_exact(short).is_err(), "one byte short must fail: {v:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives() {
        let mut out = BytesMut::new();
        put_i32(&mut out, -2);
        put_i64(&mut out, 1 << 40);
        put_bool(&mut out, true);
        put_str(&mut out, "/a");
        put_i32(&mut out, -1); // null buffer
        let mut r = Reader::new(&out);
        assert_eq!(r.i32("a").unwrap(), -2);
        assert_eq!(r.i64("b").unwrap(), 1 << 40);
        assert!(r.bool("c").unwrap());
        assert_eq!(r.string("d").unwrap(), "/a");
        assert_eq!(r.buffer("e").unwrap(), Vec::<u8>::new());
        assert!(r.is_empty());
        assert_eq!(r.i32("f"), Err(DecodeError::Truncated("f")));
    }

    #[test]
    fn lengths_are_checked_before_allocating() {
        let mut out = BytesMut::new();
        put_i32(&mut out, i32::MAX);
        assert_eq!(Reader::new(&out).buffer("x"), Err(DecodeError::Truncated("x")));
        assert!(matches!(Reader::new(&out).vec::<String>("v"), Err(DecodeError::BadLength { .. })));
        let mut out = BytesMut::new();
        put_i32(&mut out, -7);
        assert!(matches!(Reader::new(&out).string("s"), Err(DecodeError::BadLength { .. })));
        let bad = [0, 0, 0, 3, b'/', 0xff, 0xc3];
        assert_eq!(
            Reader::with_invalid(&bad, crate::rawstr::Invalid::Replace).string("s").unwrap(),
            "/\u{fffd}\u{fffd}"
        );
        // By default a byte that is not UTF-8 is kept (as its `rawstr` escape).
        assert_eq!(Reader::new(&bad).string("s").unwrap(), "/\u{10ffff}\u{10ffc3}");
    }
}
