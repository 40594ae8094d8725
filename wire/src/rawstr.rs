//! Strings that carry any bytes. ClickHouse Keeper keeps a path's bytes as they came
//! (`std::string`), UTF-8 or not; ZooKeeper decodes them as Java does, each invalid sequence
//! becoming U+FFFD. testkeeper's strings are Rust `String`s, so a byte that is not part of
//! valid UTF-8 is kept as an *escape*: the character U+10FF00 + byte (U+10FF80..=U+10FFFF, the
//! end of the last private-use plane), and written back as that one byte. Decoding escapes a
//! real U+10FF80..=U+10FFFF too (each of its four bytes), so in a decoded string that range
//! always means raw bytes, and any byte string comes back exactly: `encode(decode(b)) == b`.
//!
//! The zookeeper flavor decodes a client's request with [`Invalid::Replace`] (ZooKeeper's
//! answer to such a path is then NONODE or BADARGUMENTS); everything else (the keeper flavor,
//! the log, snapshots, peers, the client) decodes with [`Invalid::Escape`].

use std::borrow::Cow;

/// What decoding does with bytes that are not UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Invalid {
    /// Keep each byte as an escape (lossless).
    #[default]
    Escape,
    /// One U+FFFD per invalid sequence, as Java's `new String(bytes, UTF_8)` (and Rust's
    /// `from_utf8_lossy`) does.
    Replace,
}

/// The first escape character: U+10FF00 + byte, for bytes 0x80..=0xFF.
const BASE: u32 = 0x10_FF00;
/// Every escape's UTF-8 encoding starts with this byte (F4 8F BE/BF xx); no other character
/// below U+110000 shares its first two bytes, so a string without it has no escapes.
const LEAD: u8 = 0xF4;

fn escape(b: u8) -> char {
    char::from_u32(BASE + u32::from(b)).expect("U+10FF80..=U+10FFFF are characters")
}

/// The byte `c` stands for, if it is an escape.
fn unescape(c: char) -> Option<u8> {
    let v = u32::from(c);
    (BASE + 0x80..=BASE + 0xFF).contains(&v).then(|| (v - BASE) as u8)
}

/// Decodes `raw` as a string, treating bytes that are not UTF-8 as `invalid` says.
pub fn decode(raw: &[u8], invalid: Invalid) -> String {
    if let Ok(s) = std::str::from_utf8(raw) {
        if !raw.contains(&LEAD) {
            return s.to_owned();
        }
    }
    let mut out = String::with_capacity(raw.len() + 8);
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            if unescape(c).is_some() {
                // A real character in the escape range: escape its bytes, so the range means
                // raw bytes only.
                let mut b = [0; 4];
                out.extend(c.encode_utf8(&mut b).bytes().map(escape));
            } else {
                out.push(c);
            }
        }
        if !chunk.invalid().is_empty() {
            match invalid {
                Invalid::Escape => out.extend(chunk.invalid().iter().map(|b| escape(*b))),
                Invalid::Replace => out.push(char::REPLACEMENT_CHARACTER),
            }
        }
    }
    out
}

/// The bytes `s` stands for: its UTF-8, with each escape as its one byte.
pub fn raw_bytes(s: &str) -> Cow<'_, [u8]> {
    if !s.as_bytes().contains(&LEAD) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut b = [0; 4];
    for c in s.chars() {
        match unescape(c) {
            Some(raw) => out.push(raw),
            None => out.extend_from_slice(c.encode_utf8(&mut b).as_bytes()),
        }
    }
    Cow::Owned(out)
}

/// `s` with a `/`-separated name built from raw bytes, for tests and tools: each byte of
/// `raw` that is not valid UTF-8 becomes its escape.
pub fn from_raw(raw: &[u8]) -> String {
    decode(raw, Invalid::Escape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_come_back_exactly() {
        let cases: [&[u8]; 7] = [
            b"/plain",
            b"/\xc3",
            b"/a\xff\xfe/b",
            "/caf\u{e9}".as_bytes(),
            // A real escape-range character, and its first bytes alone.
            "/\u{10FF80}\u{10FFFF}".as_bytes(),
            b"/\xf4\x8f\xbe",
            b"\xf4\x8f\xbf\xbf\x80",
        ];
        for raw in cases {
            let s = decode(raw, Invalid::Escape);
            assert_eq!(raw_bytes(&s).as_ref(), raw, "{s:?}");
        }
        for n in 0..=255u8 {
            let raw = [b'/', n, n.wrapping_add(1)];
            assert_eq!(raw_bytes(&decode(&raw, Invalid::Escape)).as_ref(), raw);
        }
    }

    #[test]
    fn replace_is_from_utf8_lossy_but_keeps_the_escape_range_for_raw_bytes() {
        for raw in [&b"/\xc3"[..], b"/a\xff\xfe/b", b"/ok", "/\u{e9}\u{1F600}".as_bytes()] {
            assert_eq!(decode(raw, Invalid::Replace), String::from_utf8_lossy(raw));
        }
        let real = "/\u{10FF80}".as_bytes();
        let s = decode(real, Invalid::Replace);
        assert_ne!(s, "/\u{10FF80}");
        assert_eq!(raw_bytes(&s).as_ref(), real);
    }

    #[test]
    fn valid_utf8_outside_the_escape_range_is_borrowed_as_it_is() {
        assert!(matches!(raw_bytes("/caf\u{e9}/\u{1F600}"), Cow::Borrowed(_)));
        assert_eq!(
            decode("/\u{10FFFD}x".as_bytes(), Invalid::Escape),
            "/\u{10FFFD}x".replace('\u{10FFFD}', "\u{10FFF4}\u{10FF8F}\u{10FFBF}\u{10FFBD}")
        );
    }
}
