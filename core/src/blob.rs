//! A znode's name and data in one heap allocation, behind a one-word (thin) pointer.
//!
//! Memory per znode is a target (issue 7). A `Box<[u8]>` for the data is a 16-byte fat pointer
//! plus its own allocation, and the name would need a second one (or space in the parent's
//! child index). Here both share one exact-size allocation whose length is written in front:
//!
//! ```text
//! varint(len of the rest) | varint(name_len << 3 | kind << 1 | null) | name | data
//! ```
//!
//! so a 4-byte name with 100 bytes of data is 106 bytes in one 112-byte size class. The
//! varints are LEB128 (7 bits a byte), so names under 16 bytes cost one header byte. `null`
//! keeps a node written with null data apart from empty data (see `Node::data_is_null`);
//! `kind` (2 bits) is the node's `NodeKind`, kept here because these bits are free.

use std::fmt;
use std::ptr::NonNull;

/// Owned name + data bytes behind a thin pointer. Equal when name, data and null flag are.
pub struct Blob(NonNull<u8>);

// SAFETY: a `Blob` owns its allocation exclusively, like the `Box<[u8]>` it was made from,
// and never hands out mutable access through `&self`.
unsafe impl Send for Blob {}
// SAFETY: `&Blob` only reads the bytes.
unsafe impl Sync for Blob {}

impl Blob {
    /// A blob of `name` and `data` (`None` = null data, read back as empty) and a 2-bit `kind`.
    pub fn new(name: &str, data: Option<&[u8]>, kind: u8) -> Blob {
        assert!(kind < 4, "invariant: a blob kind fits 2 bits");
        let bytes = data.unwrap_or_default();
        let tag = (name.len() as u64) << 3 | u64::from(kind) << 1 | u64::from(data.is_none());
        let rest = varint_len(tag) + name.len() + bytes.len();
        let mut buf = Vec::with_capacity(varint_len(rest as u64) + rest);
        put_varint(&mut buf, rest as u64);
        put_varint(&mut buf, tag);
        buf.extend_from_slice(name.as_bytes());
        buf.extend_from_slice(bytes);
        debug_assert_eq!(buf.len(), buf.capacity());
        let raw = Box::into_raw(buf.into_boxed_slice());
        // The header makes the allocation at least 2 bytes, so the pointer is a real one.
        Blob(NonNull::new(raw.cast::<u8>()).expect("Box pointers are non-null"))
    }

    /// The whole allocation, header included.
    fn raw(&self) -> &[u8] {
        // SAFETY: the first bytes are the varint written by `new`, which ends (high bit clear)
        // within the allocation; reading up to and including that byte stays in bounds.
        let (rest, header) = unsafe { read_varint(self.0.as_ptr()) };
        // SAFETY: `new` allocated exactly `header + rest` bytes at this pointer, initialised.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), header + rest as usize) }
    }

    /// (name, data, null, kind).
    fn parts(&self) -> (&str, &[u8], bool, u8) {
        let raw = self.raw();
        let (_, h1) = decode(raw);
        let (tag, h2) = decode(&raw[h1..]);
        let start = h1 + h2;
        let name_len = (tag >> 3) as usize;
        let (name, data) = raw[start..].split_at(name_len);
        // SAFETY: the name bytes were copied from a `&str` in `new`; checking them again would
        // cost a UTF-8 scan on every child lookup.
        let name = unsafe { std::str::from_utf8_unchecked(name) };
        (name, data, tag & 1 == 1, (tag >> 1 & 3) as u8)
    }

    /// The node's own name (the last path segment; empty for the root).
    pub fn name(&self) -> &str {
        self.parts().0
    }

    /// The data; empty when null.
    pub fn data(&self) -> &[u8] {
        self.parts().1
    }

    /// Whether the data was written as null.
    pub fn is_null(&self) -> bool {
        self.parts().2
    }

    /// The 2-bit kind given to `new`.
    pub fn kind(&self) -> u8 {
        self.parts().3
    }

    /// Bytes allocated on the heap.
    #[cfg(test)]
    pub fn heap_size(&self) -> usize {
        self.raw().len()
    }
}

impl Drop for Blob {
    fn drop(&mut self) {
        let len = self.raw().len();
        // SAFETY: the pointer and length are those of the `Box<[u8]>` leaked in `new`, and
        // this is the only owner.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.0.as_ptr(), len)) });
    }
}

impl Clone for Blob {
    fn clone(&self) -> Blob {
        let (name, data, null, kind) = self.parts();
        Blob::new(name, if null { None } else { Some(data) }, kind)
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Blob) -> bool {
        self.raw() == other.raw()
    }
}

impl Eq for Blob {}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, data, null, kind) = self.parts();
        let mut d = f.debug_struct("Blob");
        d.field("name", &name).field("data_len", &data.len()).field("null", &null).field("kind", &kind).finish()
    }
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// (value, bytes used) of the varint at the start of `b`.
fn decode(b: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    unreachable!("invariant: blob header varint is terminated")
}

/// # Safety
/// `p` must point at a varint that ends inside its allocation.
unsafe fn read_varint(p: *const u8) -> (u64, usize) {
    let mut v = 0u64;
    let mut i = 0;
    loop {
        // SAFETY: the caller promises every byte up to the terminating one is in bounds.
        let byte = unsafe { *p.add(i) };
        v |= u64::from(byte & 0x7f) << (7 * i);
        i += 1;
        if byte & 0x80 == 0 {
            return (v, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_names_data_and_null() {
        let long_name = "x".repeat(300);
        let big = vec![7u8; 70_000];
        for name in ["", "n1", "é", long_name.as_str()] {
            for (kind, data) in [None, Some(&b""[..]), Some(&b"abc"[..]), Some(&big[..])].into_iter().enumerate() {
                let b = Blob::new(name, data, kind as u8);
                assert_eq!(b.name(), name);
                assert_eq!(b.data(), data.unwrap_or_default());
                assert_eq!(b.is_null(), data.is_none());
                assert_eq!(b.kind(), kind as u8);
                let c = b.clone();
                assert_eq!(c, b);
                assert_eq!(c.name(), name);
            }
        }
        assert_ne!(Blob::new("a", None, 0), Blob::new("a", Some(b""), 0), "null differs from empty");
        assert_ne!(Blob::new("a", None, 0), Blob::new("a", None, 1), "kinds differ");
    }

    #[test]
    fn small_nodes_take_one_byte_of_each_header() {
        // The bench's znodes: a 4-byte name and 100 bytes of data fit a 112-byte size class.
        assert_eq!(Blob::new("n999", Some(&[0u8; 100]), 3).heap_size(), 1 + 1 + 4 + 100);
        assert_eq!(std::mem::size_of::<Blob>(), 8);
        assert_eq!(std::mem::size_of::<Option<Blob>>(), 8);
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX >> 1] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(decode(&b), (v, b.len()));
        }
    }
}
