//! An Apache ZooKeeper data directory: `version-2/` with `snapshot.<zxid>` files and
//! `log.<zxid>` txn logs (names in hex). The newest snapshot is read, then every txn after its
//! zxid from the logs, as ZooKeeper's own start-up (`FileTxnSnapLog.restore`) and ClickHouse's
//! `keeper-converter` do. Compressed snapshots (`.gz`, `.snappy`) are refused by name.
//!
//! # Layout
//! - this file: finding the files, [`import_dir`].
//! - `snap`: the snapshot file.
//! - `txnlog`: txn log files, and turning their txns into the core's entries.

pub(crate) mod snap;
pub(crate) mod txnlog;

use std::path::{Path, PathBuf};

use testkeeper_core::state::StateOptions;

use super::{build, read_file, ImportError, Imported};

/// `version-2` itself, or the `version-2` inside `path`, when it holds ZooKeeper files.
pub fn version_dir(path: &Path) -> Option<PathBuf> {
    let holds = |d: &Path| {
        std::fs::read_dir(d).ok().is_some_and(|it| {
            it.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                is_snapshot_name(&name) || zxid_of(&name, "log.").is_some()
            })
        })
    };
    [path.to_path_buf(), path.join("version-2")].into_iter().find(|d| holds(d))
}

/// True for `snapshot.<hex zxid>` (with or without a compression suffix).
pub fn is_snapshot_name(name: &str) -> bool {
    zxid_of(name, "snapshot.").is_some()
}

/// The zxid in `<prefix><hex>[.suffix]`.
fn zxid_of(name: &str, prefix: &str) -> Option<i64> {
    let hex = name.strip_prefix(prefix)?;
    let hex = hex.split('.').next()?;
    u64::from_str_radix(hex, 16).ok().map(|z| z as i64)
}

fn files(dir: &Path, prefix: &str) -> Result<Vec<(i64, PathBuf)>, ImportError> {
    let io = |e: std::io::Error| ImportError::Io { file: dir.to_path_buf(), why: e.to_string() };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let path = e.map_err(io)?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(z) = zxid_of(&name, prefix) {
            out.push((z, path));
        }
    }
    out.sort();
    Ok(out)
}

/// Imports a `version-2` directory: the newest snapshot that reads, then the logs after it.
///
/// # Errors
/// See [`ImportError`]. A damaged newest snapshot is an error, not a reason to fall back to
/// an older one: what the directory holds should be looked at, not guessed around.
pub fn import_dir(dir: &Path, opts: &StateOptions) -> Result<Imported, ImportError> {
    let snaps = files(dir, "snapshot.")?;
    let Some((snap_zxid, snap_file)) = snaps.last().cloned() else {
        return Err(ImportError::Format {
            file: dir.to_path_buf(),
            why: "no snapshot.<zxid> file: ZooKeeper writes one at its first start".into(),
        });
    };
    let mut foreign = snap::read(&read_file(&snap_file)?, &snap_file)?;
    // Replay starts after the zxid in the file's name, as ZooKeeper's restore does; the
    // fuzzy snapshot may already hold later txns (skipped below when their change is there).
    foreign.zxid = snap_zxid;
    let mut state = build(&foreign, opts, &snap_file)?;
    let mut used = vec![snap_file.clone()];
    // The log holding the first txn after the snapshot starts at or before it: the newest log
    // named at or below snap_zxid + 1, and every later one.
    let logs = files(dir, "log.")?;
    let first = logs.iter().rposition(|(z, _)| *z <= snap_zxid + 1).unwrap_or(0);
    let mut replay = txnlog::Replay::new(snap_zxid);
    for (_, file) in logs.iter().skip(first) {
        replay.file(&read_file(file)?, file, &mut state)?;
        used.push(file.clone());
    }
    Ok(Imported {
        state,
        files: used,
        format: "ZooKeeper data directory",
        stored_digest: None,
        txns_applied: replay.applied,
        txns_skipped: replay.skipped,
    })
}

/// Imports one ZooKeeper snapshot file, without the logs beside it.
///
/// # Errors
/// See [`ImportError`].
pub fn import_snapshot_only(file: &Path, opts: &StateOptions) -> Result<Imported, ImportError> {
    let foreign = snap::read(&read_file(file)?, file)?;
    let state = build(&foreign, opts, file)?;
    Ok(Imported {
        state,
        files: vec![file.to_path_buf()],
        format: "ZooKeeper snapshot",
        stored_digest: None,
        txns_applied: 0,
        txns_skipped: 0,
    })
}
