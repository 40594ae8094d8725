//! Snapshot files in `DATA_DIR/snapshots`: `snapshot_<index>.bin.zst`, each the core's
//! deterministic serialization compressed with zstd. A file is written under a temporary name,
//! fsynced, renamed into place and the directory fsynced, so a crash leaves either the whole
//! file or an ignorable `.tmp`; older files beyond the configured count are removed.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// zstd level: fast (the file is written while the server serves), still several times smaller.
const LEVEL: i32 = 3;

/// A snapshot file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    pub index: u64,
    pub path: PathBuf,
}

/// The name of the snapshot at `index`.
pub fn file_name(index: u64) -> String {
    format!("snapshot_{index}.bin.zst")
}

fn parse(name: &str) -> Option<u64> {
    name.strip_prefix("snapshot_")?.strip_suffix(".bin.zst")?.parse().ok()
}

/// The snapshot files in `dir`, oldest first; also the stray temporary files of writes that a
/// crash interrupted.
///
/// # Errors
/// The directory cannot be read.
pub fn list(dir: &Path) -> io::Result<(Vec<SnapshotFile>, Vec<PathBuf>)> {
    let (mut files, mut stray) = (Vec::new(), Vec::new());
    if !dir.exists() {
        return Ok((files, stray));
    }
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".tmp") {
            stray.push(e.path());
        } else if let Some(index) = parse(&name) {
            files.push(SnapshotFile { index, path: e.path() });
        }
    }
    files.sort_by_key(|f| f.index);
    Ok((files, stray))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Compresses `body` into the snapshot file for `index` in `dir`, durably; returns the file
/// and its size.
///
/// # Errors
/// Any I/O failure; the temporary file may be left behind, never a partial final file.
pub fn write(dir: &Path, index: u64, body: &[u8]) -> io::Result<(PathBuf, u64)> {
    fs::create_dir_all(dir)?;
    let path = dir.join(file_name(index));
    let tmp = dir.join(format!("{}.tmp", file_name(index)));
    let compressed = zstd::bulk::compress(body, LEVEL)?;
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(&compressed)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)?;
        sync_dir(dir)
    })();
    if let Err(e) = written {
        // A full disk fails the write half way: leave no partial `.tmp` behind (each failed
        // attempt once left one, and the next attempt on a full disk fills it further).
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok((path, compressed.len() as u64))
}

/// The decompressed body of a snapshot file.
///
/// # Errors
/// The file cannot be read or is not zstd.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut compressed = Vec::new();
    File::open(path)?.read_to_end(&mut compressed)?;
    zstd::stream::decode_all(&compressed[..])
}

/// Removes all but the newest `keep` snapshot files (never the newest).
///
/// # Errors
/// A file that cannot be removed.
pub fn prune(dir: &Path, keep: usize) -> io::Result<()> {
    let (files, _) = list(dir)?;
    let keep = keep.max(1);
    if files.len() > keep {
        for f in &files[..files.len() - keep] {
            fs::remove_file(&f.path)?;
        }
        sync_dir(dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_list_read_prune() {
        let dir = tempfile::tempdir().unwrap();
        for i in [5u64, 50, 7] {
            write(dir.path(), i, format!("body {i}").as_bytes()).unwrap();
        }
        fs::write(dir.path().join("snapshot_9.bin.zst.tmp"), b"half").unwrap();
        let (files, stray) = list(dir.path()).unwrap();
        assert_eq!(files.iter().map(|f| f.index).collect::<Vec<_>>(), vec![5, 7, 50]);
        assert_eq!(stray.len(), 1);
        assert_eq!(read(&files[2].path).unwrap(), b"body 50");
        prune(dir.path(), 2).unwrap();
        assert_eq!(list(dir.path()).unwrap().0.iter().map(|f| f.index).collect::<Vec<_>>(), vec![7, 50]);
    }
}
