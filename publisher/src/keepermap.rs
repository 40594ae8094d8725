//! KeeperMap's row format, as ClickHouse 26.x writes it (observed through chdb against
//! testkeeper; see docs/publisher.md): a table at `<prefix>/<table>` has a `metadata` node and a
//! `data` node (both holding the metadata text below), and each row is the node
//! `data/<base64url(binary key)>` whose data is the binary serialization of the other columns.
//!
//! ClickHouse's binary `String` is a LEB128 varint length followed by the bytes, so the key
//! `db.t` is `\x04db.t` and its node name is `BGRiLnQ=`.

use base64::engine::general_purpose::URL_SAFE;
use base64::Engine as _;

/// The metadata text ClickHouse stores for `(target String, authority String) PRIMARY KEY
/// target`; writing the same bytes lets ClickHouse attach the table we laid out ourselves.
pub const METADATA: &str = "KeeperMap metadata format version: 1\ncolumns: columns format version: 1\n2 columns:\n`target` String\n`authority` String\nprimary key: target\n";

/// ClickHouse binary serialization of a `String`: varint length, then the bytes.
pub fn encode_string(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    let mut n = s.len() as u64;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(s.as_bytes());
    out
}

/// Reads one binary `String` from the front of `buf`; returns it and the bytes after it.
pub fn decode_string(buf: &[u8]) -> Option<(String, &[u8])> {
    let mut len: u64 = 0;
    for (i, b) in buf.iter().enumerate().take(10) {
        len |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            let rest = &buf[i + 1..];
            let len = usize::try_from(len).ok()?;
            if rest.len() < len {
                return None;
            }
            let s = String::from_utf8(rest[..len].to_vec()).ok()?;
            return Some((s, &rest[len..]));
        }
    }
    None
}

/// The row node's name for a `String` key. ClickHouse uses the URL-safe alphabet with
/// padding, so a key never yields a `/` in the node name (checked against chdb with keys whose
/// encodings differ between the alphabets: `tests/tests/publisher_chdb.rs`).
pub fn key_node_name(key: &str) -> String {
    URL_SAFE.encode(encode_string(key))
}

/// Where one KeeperMap table keeps its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLayout {
    /// `<keeper_map_path_prefix>/<table path>`.
    pub root: String,
}

impl TableLayout {
    /// The layout for `prefix` (server's `keeper_map_path_prefix`) and the table's path.
    pub fn new(prefix: &str, table: &str) -> TableLayout {
        TableLayout { root: format!("{}/{}", prefix.trim_end_matches('/'), table.trim_matches('/')) }
    }

    /// The nodes to create (in order) so that the table exists, with their data.
    pub fn skeleton(&self) -> Vec<(String, Vec<u8>)> {
        vec![
            (self.root.clone(), Vec::new()),
            (format!("{}/metadata", self.root), METADATA.as_bytes().to_vec()),
            (format!("{}/metadata/tables", self.root), Vec::new()),
            (self.data_dir(), METADATA.as_bytes().to_vec()),
        ]
    }

    /// The directory holding the rows.
    pub fn data_dir(&self) -> String {
        format!("{}/data", self.root)
    }

    /// The row node for `key`.
    pub fn row_path(&self, key: &str) -> String {
        format!("{}/{}", self.data_dir(), key_node_name(key))
    }
}

/// The node data of a row whose only non-key column is `authority`.
pub fn encode_row_value(authority: &str) -> Vec<u8> {
    encode_string(authority)
}

/// The `authority` column of a row's node data; `None` when it is not exactly one String.
pub fn decode_row_value(data: &[u8]) -> Option<String> {
    match decode_string(data)? {
        (s, []) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_what_clickhouse_wrote() {
        // Observed: INSERT INTO t VALUES ('db.t', '{"x":1}') made data/BGRiLnQ= = b'\x07{"x":1}'.
        assert_eq!(key_node_name("db.t"), "BGRiLnQ=");
        assert_eq!(encode_row_value("{\"x\":1}"), b"\x07{\"x\":1}");
        assert_eq!(decode_row_value(b"\x07{\"x\":1}").as_deref(), Some("{\"x\":1}"));
        assert_eq!(decode_row_value(b"\x07{\"x\":1}!"), None);
        assert_eq!(decode_row_value(b"\x08{\"x\":1}"), None);
    }

    #[test]
    fn long_strings_use_a_multi_byte_varint() {
        let s = "a".repeat(300);
        let enc = encode_string(&s);
        assert_eq!(&enc[..2], &[0xac, 0x02]);
        assert_eq!(decode_string(&enc).map(|(s, r)| (s.len(), r.len())), Some((300, 0)));
        assert_eq!(TableLayout::new("/kmt/", "/p").row_path("db.t"), "/kmt/p/data/BGRiLnQ=");
    }

    #[test]
    fn node_names_use_the_url_safe_alphabet() {
        // What chdb wrote (publisher_chdb.rs): standard base64 would be `BWRiLnQ/`, a nested path.
        assert_eq!(key_node_name("db.t?"), "BWRiLnQ_");
        assert_eq!(key_node_name("db.a>?"), "BmRiLmE-Pw==");
    }
}
