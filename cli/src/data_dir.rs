//! `serve --data-dir DIR` before anything opens it: the directory is made if missing and
//! locked for this process, and each way that can fail gets a message that names what is
//! wrong and what to do, instead of a raw OS error from deep inside the log store (sled's
//! "could not acquire lock ... Os { code: 11, kind: WouldBlock }" was what a second server on
//! the same directory used to print).
//!
//! The lock is `DIR/testkeeper.lock`, held with an exclusive advisory lock (`flock`) for the
//! life of the process. Once the server has started it holds its PID, so a second server can
//! say who holds it. The kernel drops the lock when the process ends, however it ends; a stale
//! file is harmless. A start that is refused leaves the directory exactly as it was: the PID is
//! written only after recovery succeeded, and a lock file this start created is removed again.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::exit::CliError;

/// The name of the lock file inside the data directory.
pub const LOCK_FILE: &str = "testkeeper.lock";

/// Held for as long as the server runs; dropping it releases the directory.
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: std::path::PathBuf,
    /// This start made the file (so a refused start removes it again).
    created: bool,
    /// The server started and the file names it.
    claimed: bool,
}

impl DirLock {
    /// The server started on the directory: record its PID for the next one to name.
    pub fn claim(&mut self) {
        self.claimed = true;
        let file = &mut self.file;
        let _ = file.set_len(0).and_then(|()| file.seek(SeekFrom::Start(0))).and_then(|_| {
            writeln!(file, "{}", std::process::id())?;
            file.flush()
        });
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        if self.created && !self.claimed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// An I/O error as a person reads it: the OS's own sentence without Rust's debug form.
fn plain(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::NotFound => "no such file or directory".into(),
        _ => e.to_string(),
    }
}

/// Makes `dir` if needed and locks it for this process.
///
/// # Errors
/// `CliError::Usage` (exit 2) when the path is not usable as a directory; `CliError::Failed`
/// (exit 1) when another process holds it.
pub fn prepare(dir: &Path) -> Result<DirLock, CliError> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(CliError::Usage(format!(
                "--data-dir {shown} is not a directory (it is a file): give a directory path, or move the file away"
            )))
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => std::fs::create_dir_all(dir).map_err(|e| {
            CliError::Usage(format!(
                "cannot create the data directory {shown}: {}: check that its parent exists and is writable by this user",
                plain(&e)
            ))
        })?,
        Err(e) => return Err(CliError::Usage(format!("cannot use the data directory {shown}: {}", plain(&e)))),
    }
    let path = dir.join(LOCK_FILE);
    let created = !path.exists();
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(|e| {
        CliError::Usage(format!(
            "the data directory {shown} is not writable: cannot create {}: {}: the server writes its log and snapshots there",
            path.display(),
            plain(&e)
        ))
    })?;
    if let Err(e) = file.try_lock() {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        let who = match pid.trim().parse::<u32>() {
            Ok(p) => format!("another testkeeper process (PID {p})"),
            Err(_) => "another process".to_string(),
        };
        let why = match e {
            std::fs::TryLockError::WouldBlock => String::new(),
            std::fs::TryLockError::Error(e) => format!(" ({})", plain(&e)),
        };
        return Err(CliError::Failed(format!(
            "the data directory {shown} is in use by {who}{why}: stop that server first, or give each server its own --data-dir"
        )));
    }
    Ok(DirLock { file, path, created, claimed: false })
}

/// The message for a data directory that does not recover: what failed, and what to do.
pub fn refused(dir: &Path, e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    let fix = if text.contains("snapshot at index") {
        "; recovery never falls back on its own: to start from an older snapshot, move this file \
         out of the snapshots directory (docs/persistence.md, \"Recovery\")"
    } else if text.contains("was made with") {
        "; start with the flags it was made with, or give a new --data-dir"
    } else {
        "; see docs/persistence.md, \"Recovery\""
    };
    format!("refusing to start: the data directory {} does not recover: {text}{fix}", dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_a_missing_parent_and_a_second_holder_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = prepare(&file).unwrap_err();
        assert!(matches!(&e, CliError::Usage(m) if m.contains("is not a directory")), "{e}");

        let dir = tmp.path().join("new/deeper");
        drop(prepare(&dir).expect("made and locked"));
        assert!(!dir.join(LOCK_FILE).exists(), "an unclaimed lock file this start made is removed");
        let mut held = prepare(&dir).expect("made and locked");
        held.claim();
        assert!(dir.join(LOCK_FILE).exists());
        let e = prepare(&dir).unwrap_err();
        let want = format!("in use by another testkeeper process (PID {})", std::process::id());
        assert!(matches!(&e, CliError::Failed(m) if m.contains(&want)), "{e}");
        drop(held);
        prepare(&dir).expect("free again once the holder is gone");

        let under_file = file.join("sub");
        let e = prepare(&under_file).unwrap_err();
        assert!(e.to_string().contains("cannot"), "{e}");
        assert!(!e.to_string().contains("Os {"), "{e}");
    }

    #[test]
    fn a_bad_snapshot_says_how_to_start_anyway() {
        let m = refused(Path::new("/d"), &"/d/snapshots/snapshot_9.bin.zst: snapshot at index 9: checksum mismatch");
        assert!(m.contains("snapshot_9.bin.zst") && m.contains("move this file"), "{m}");
    }
}
