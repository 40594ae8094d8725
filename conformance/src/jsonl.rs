//! The JSON-lines files of the conformance tools (transcripts, proxy recordings): one
//! `{"meta": ...}` line, and one record per other line; blank lines are skipped.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a JSON-lines file could not be read.
#[derive(Debug)]
pub enum JsonlError {
    /// The file cannot be read.
    Io { path: PathBuf, source: std::io::Error },
    /// Line `line` (1-based) is not JSON, or not the record it should be.
    Line { path: PathBuf, line: usize, source: serde_json::Error },
    /// No `{"meta": ...}` line.
    NoMeta { path: PathBuf },
}

impl std::fmt::Display for JsonlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonlError::Io { path, source } => write!(f, "reading {}: {source}", path.display()),
            JsonlError::Line { path, line, source } => write!(f, "{}:{line}: {source}", path.display()),
            JsonlError::NoMeta { path } => write!(f, "{}: no meta line", path.display()),
        }
    }
}

impl std::error::Error for JsonlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonlError::Io { source, .. } => Some(source),
            JsonlError::Line { source, .. } => Some(source),
            JsonlError::NoMeta { .. } => None,
        }
    }
}

/// Reads `path`: its meta line and its records, in order (the last meta line wins).
///
/// # Errors
/// I/O errors, a line that is not a record (with its number), no meta line.
pub fn read<M: DeserializeOwned, T: DeserializeOwned>(path: &Path) -> Result<(M, Vec<T>), JsonlError> {
    let text = std::fs::read_to_string(path).map_err(|source| JsonlError::Io { path: path.to_path_buf(), source })?;
    let mut meta = None;
    let mut records = Vec::new();
    for (i, raw) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |source| JsonlError::Line { path: path.to_path_buf(), line: i + 1, source };
        let v: Value = serde_json::from_str(raw).map_err(at)?;
        match v.get("meta") {
            Some(m) => meta = Some(serde_json::from_value(m.clone()).map_err(at)?),
            None => records.push(serde_json::from_value(v).map_err(at)?),
        }
    }
    Ok((meta.ok_or_else(|| JsonlError::NoMeta { path: path.to_path_buf() })?, records))
}
