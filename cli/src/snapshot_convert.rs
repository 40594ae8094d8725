//! `testkeeper snapshot convert SRC --out DEST` and `testkeeper snapshot export SRC --format
//! keeper --out DEST`: state between testkeeper, ClickHouse Keeper and ZooKeeper.
//!
//! `convert` reads what `serve --import` reads (a Keeper snapshot file or directory, a
//! ZooKeeper data directory or snapshot file) and writes it as a Keeper snapshot, as
//! ClickHouse's `keeper-converter` turns a ZooKeeper directory into one. `export` writes
//! testkeeper's own snapshot (a file, or the newest in a `--data-dir`) as a Keeper snapshot a
//! real Keeper loads. Both print what was read and the tree's digest, and name a Keeper
//! snapshot whose stored digest differs from the imported tree's.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::exit::CliError;
use testkeeper_server::core::flavor::{Flavor, Rules};
use testkeeper_server::core::state::{State, StateOptions};
use testkeeper_server::interop::{self, keeper};
use testkeeper_server::storage::{snapshot_dir, snapshots};

/// Flags of `snapshot convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// A Keeper snapshot file (`snapshot_N.bin.zstd`, V5 or V6) or a directory of them, a
    /// ZooKeeper data directory (`version-2/` or its parent), or a ZooKeeper snapshot file.
    src: PathBuf,
    /// Where to write the Keeper snapshot: a file, or an existing directory to write
    /// `snapshot_<index>.bin.zstd` into.
    #[arg(long)]
    out: PathBuf,
    /// The flavor whose system nodes fill in what the source lacks.
    #[arg(long, default_value = "keeper", value_parser = crate::serve::parse_flavor)]
    flavor: Flavor,
}

/// Flags of `snapshot export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A testkeeper snapshot file (`snapshot_<index>.bin.zst`), or a data directory (its
    /// newest snapshot is read).
    src: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// Where to write: a file, or an existing directory.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ExportFormat {
    /// ClickHouse Keeper's snapshot file, format V6, zstd.
    Keeper,
}

fn options(flavor: Flavor) -> StateOptions {
    let cfg = testkeeper_server::config::ServerConfig::new(flavor);
    testkeeper_server::engine::Engine::fresh_options(&cfg, 0)
}

/// Runs `snapshot convert`.
///
/// # Errors
/// The source does not read (the message names the file and what is wrong), or the output
/// cannot be written.
pub fn convert(args: &ConvertArgs) -> Result<(), CliError> {
    let imported = interop::import(&args.src, &options(args.flavor)).map_err(|e| e.to_string())?;
    let files: Vec<String> = imported.files.iter().map(|f| f.display().to_string()).collect();
    println!("read {}: {}", imported.format, files.join(", "));
    if imported.txns_applied + imported.txns_skipped > 0 {
        println!(
            "txns after the snapshot: {} applied, {} already in the (fuzzy) snapshot",
            imported.txns_applied, imported.txns_skipped
        );
    }
    match (imported.stored_digest, imported.digest_matches()) {
        (Some(d), Some(true)) => println!("digest {d}: equal to the one the snapshot stores"),
        (Some(d), _) => println!(
            "warning: the snapshot stores digest {d}, the imported tree's is {}; Keeper counts its \
             /keeper system nodes, whose data differ between versions",
            imported.state.tree().digest()
        ),
        (None, _) => {}
    }
    write_keeper(&imported.state, &args.out)
}

/// Runs `snapshot export`.
///
/// # Errors
/// The snapshot does not verify, or the output cannot be written.
pub fn export(args: &ExportArgs) -> Result<(), CliError> {
    let ExportFormat::Keeper = args.format;
    let file = if args.src.is_dir() { newest_own(&args.src)? } else { args.src.clone() };
    let name = file.display();
    let body = snapshots::read(&file).map_err(|e| format!("{name}: cannot read it as a zstd snapshot: {e}"))?;
    // Keeper's rules: its system nodes are the ones a Keeper snapshot leaves out.
    let state = testkeeper_server::core::snapshot::read(&body, &Rules::new(Flavor::Keeper, 0), |_| {})
        .map_err(|e| format!("{name}: {e}"))?;
    println!("read testkeeper snapshot {name} (index {})", state.last_index());
    write_keeper(&state, &args.out)
}

/// The newest snapshot in a data directory (or in a snapshots directory itself).
fn newest_own(dir: &Path) -> Result<PathBuf, CliError> {
    for d in [snapshot_dir(dir), dir.to_path_buf()] {
        let (files, _) = snapshots::list(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        if let Some(f) = files.last() {
            return Ok(f.path.clone());
        }
    }
    Err(format!("{}: no testkeeper snapshot (snapshots/snapshot_<index>.bin.zst)", dir.display()).into())
}

fn write_keeper(state: &State, out: &Path) -> Result<(), CliError> {
    let bytes = keeper::export(state).map_err(|e| format!("cannot write a Keeper snapshot: {e}"))?;
    // NuRaft's snapshot index must be past 0 for Keeper to load it.
    let index = state.last_index().max(1);
    let dest = if out.is_dir() { out.join(keeper::file_name(index)) } else { out.to_path_buf() };
    let tmp = dest.with_extension("tmp");
    std::fs::write(&tmp, &bytes)
        .and_then(|()| std::fs::rename(&tmp, &dest))
        .map_err(|e| format!("{}: {e}", dest.display()))?;
    let digest = state.tree().digest();
    println!(
        "wrote {} (Keeper snapshot V{}, zstd, {} bytes): {} nodes, {} sessions, zxid {:#x}, digest {digest}",
        dest.display(),
        keeper::EXPORT_VERSION,
        bytes.len(),
        state.tree().len(),
        state.sessions().len(),
        state.zxid()
    );
    Ok(())
}
