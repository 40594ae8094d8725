//! The recording of proxied traffic (`testkeeper proxy --record FILE`), which `testkeeper
//! replay` plays against another server: JSON lines, one per handshake, request and
//! connection end, in the order the upstream answered.
//!
//! ```text
//! {"meta":{"upstream":"127.0.0.1:2181","flavor":"zookeeper","recorded_with":"testkeeper proxy 0.1.0"}}
//! {"conn":1,"handshake":{"timeout_ms":30000,"resumes":null,"read_only":null},"reply":{"negotiated_timeout_ms":30000}}
//! {"conn":1,"seq":1,"xid":1,"opcode":1,"op":"create /a \"x\" flags=0","body":"00000002...","reply":{"path":"/a"}}
//! {"conn":1,"closed":true,"events":["NodeDataChanged /a"]}
//! ```
//!
//! `body` is the request body as sent (hex), so a request replays byte for byte; `op` is its
//! text form for people; `reply` is the upstream's reply normalized as in [`super::label`].

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub upstream: String,
    pub flavor: String,
    pub recorded_with: String,
}

/// What a client asked for in its handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handshake {
    pub timeout_ms: i32,
    /// The connection whose session this one resumes (`c3`), if it resumes one.
    pub resumes: Option<String>,
    /// The readOnly flag, absent from 44-byte handshakes.
    pub read_only: Option<bool>,
}

/// One line after the meta line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entry {
    Open { conn: u64, handshake: Handshake, reply: Value },
    Request { conn: u64, seq: u64, xid: i32, opcode: i32, op: String, body: String, reply: Value },
    Closed { conn: u64, closed: bool, events: Vec<String> },
}

/// Appends lines to a recording as they happen.
pub struct Recorder {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl Recorder {
    /// Creates `path` and writes the meta line.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path, meta: &Meta) -> std::io::Result<Recorder> {
        let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(file, "{}", serde_json::json!({ "meta": meta }))?;
        file.flush()?;
        Ok(Recorder { file: Mutex::new(file) })
    }

    /// Appends one entry (flushed, so a recording survives the proxy being killed).
    pub fn write(&self, e: &Entry) {
        let mut f = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(line) = serde_json::to_string(e) {
            let _ = writeln!(f, "{line}");
            let _ = f.flush();
        }
    }
}

/// Reads a recording.
///
/// # Errors
/// I/O errors and lines that are not entries, with their number.
pub fn read(path: &Path) -> Result<(Meta, Vec<Entry>), crate::jsonl::JsonlError> {
    crate::jsonl::read(path)
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Text that is not hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// An odd number of digits.
    OddLength(usize),
    /// A pair that is not two hex digits, at this byte offset.
    NotHex { at: usize, pair: String },
}

impl std::fmt::Display for HexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HexError::OddLength(n) => write!(f, "hex of odd length {n}"),
            HexError::NotHex { at, pair } => write!(f, "hex: '{pair}' at offset {at} is not two hex digits"),
        }
    }
}

impl std::error::Error for HexError {}

/// Lowercase or uppercase hex back to bytes.
///
/// # Errors
/// An odd length or a non-hex digit.
pub fn unhex(s: &str) -> Result<Vec<u8>, HexError> {
    if !s.len().is_multiple_of(2) {
        return Err(HexError::OddLength(s.len()));
    }
    let pair = |i: usize| s.get(i..i + 2).unwrap_or("");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(pair(i), 16).map_err(|_| HexError::NotHex { at: i, pair: pair(i).to_string() }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_a_file() {
        let dir = tempfile_dir();
        let path = dir.join("rec.jsonl");
        let meta = Meta { upstream: "u".into(), flavor: "zookeeper".into(), recorded_with: "t".into() };
        let r = Recorder::create(&path, &meta).unwrap();
        let entries = vec![
            Entry::Open {
                conn: 1,
                handshake: Handshake { timeout_ms: 30000, resumes: None, read_only: None },
                reply: serde_json::json!({"negotiated_timeout_ms": 30000}),
            },
            Entry::Request {
                conn: 1,
                seq: 1,
                xid: 1,
                opcode: 4,
                op: "get /a".into(),
                body: hex(&[0, 1, 0xff]),
                reply: serde_json::json!({"err": "NONODE"}),
            },
            Entry::Closed { conn: 1, closed: true, events: vec!["NodeCreated /a".into()] },
        ];
        entries.iter().for_each(|e| r.write(e));
        drop(r);
        assert_eq!(read(&path).unwrap(), (meta, entries));
        assert_eq!(unhex("00ff10").unwrap(), vec![0, 255, 16]);
        assert_eq!(unhex("0"), Err(HexError::OddLength(1)));
        assert_eq!(unhex("00zz"), Err(HexError::NotHex { at: 2, pair: "zz".into() }));
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tk-record-{}-{}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
