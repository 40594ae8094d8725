//! `testkeeper snapshot inspect FILE [--dump] [--json]`: what a snapshot file says about itself
//! (header, sessions), whether it verifies (its checksum, and its digest recomputed from the
//! tree it holds), and with `--dump` the tree itself as JSON lines.
//!
//! It reads the file the way recovery does (`storage::snapshots::read`, then
//! `core::snapshot::read`), so a file it passes is one `serve --data-dir` accepts, and what it
//! refuses it names: the file, the index, and what differed. It never writes the file.
//!
//! With `--dump`, stdout carries only the node lines (so it can be piped into `jq`) and the
//! summary goes to stderr. Every 64-bit integer is a JSON string: zxids, times, session ids and
//! digests pass 2^53, where JSON readers start rounding. Zxids and session ids are hex
//! (`0x1f`), in the text and the JSON alike, as ZooKeeper's own tools and `stat` print them;
//! times, indexes and digests are decimal.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use clap::{Args, Subcommand};
use serde::Serialize;
use testkeeper_server::core::digest::DIGEST_VERSION;
use testkeeper_server::core::flavor::{Flavor, Rules};
use testkeeper_server::core::snapshot::{self, DumpedNode, Header, SnapshotError};
use testkeeper_server::storage::snapshots;

/// Flags of `snapshot`.
#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(subcommand)]
    command: SnapshotCommand,
}

#[derive(Subcommand, Debug)]
enum SnapshotCommand {
    /// Print a snapshot's header and sessions, verify its checksum and digest; exit non-zero
    /// naming what differed.
    Inspect(InspectArgs),
    /// Read a Keeper snapshot or a ZooKeeper data directory and write it as a Keeper snapshot.
    Convert(crate::snapshot_convert::ConvertArgs),
    /// Write a testkeeper snapshot (a file, or a data directory's newest) in another format.
    Export(crate::snapshot_convert::ExportArgs),
}

/// Flags of `snapshot inspect`.
#[derive(Args, Debug)]
struct InspectArgs {
    /// A snapshot file (DATA_DIR/snapshots/snapshot_<index>.bin.zst).
    file: PathBuf,
    /// Write the tree to stdout as JSON lines, one node per line in path order; the summary
    /// then goes to stderr.
    #[arg(long)]
    dump: bool,
    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `snapshot ...`.
///
/// # Errors
/// The file cannot be read, or it does not verify: the message names the file, the index and
/// what differed.
pub fn run(args: SnapshotArgs) -> Result<(), crate::exit::CliError> {
    match args.command {
        SnapshotCommand::Inspect(a) => Ok(inspect(&a)?),
        SnapshotCommand::Convert(a) => crate::snapshot_convert::convert(&a),
        SnapshotCommand::Export(a) => crate::snapshot_convert::export(&a),
    }
}

/// What inspecting found.
struct Report {
    header: Header,
    /// Sessions (id, timeout ms), when the body was read to its end.
    sessions: Option<Vec<(i64, i32)>>,
    checksum_ok: bool,
    /// `Some(true)`: recomputed and equal; `None`: not checked (see `problems`).
    digest_ok: Option<bool>,
    problems: Vec<String>,
}

fn inspect(args: &InspectArgs) -> Result<(), String> {
    let file = args.file.display().to_string();
    let body = snapshots::read(&args.file).map_err(|e| format!("{file}: cannot read it as a zstd snapshot: {e}"))?;
    let header = snapshot::header(&body).map_err(|e| format!("{file}: {e}"))?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut write_error: Option<io::Error> = None;
    // The tree's flavor is not in the snapshot (the data directory's metadata holds it), and
    // neither the checksum nor the digest depends on it.
    let rules = Rules::new(Flavor::Keeper, 0);
    let result = snapshot::read(&body, &rules, |n| {
        if args.dump && write_error.is_none() {
            if let Err(e) = writeln!(out, "{}", node_json(n)) {
                write_error = Some(e);
            }
        }
    });
    if let Some(e) = write_error.or_else(|| out.flush().err()) {
        return Err(format!("writing the dump: {e}"));
    }
    drop(out);
    let report = verify(&args.file, header, result);
    let summary = if args.json {
        serde_json::to_string_pretty(&report_json(&args.file, &report)).map_err(|e| e.to_string())? + "\n"
    } else {
        report_text(&args.file, &report)
    };
    let printed =
        if args.dump { io::stderr().write_all(summary.as_bytes()) } else { io::stdout().write_all(summary.as_bytes()) };
    printed.map_err(|e| format!("writing the summary: {e}"))?;
    if report.problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{file}: snapshot at index {} does not verify: {}",
            report.header.index,
            report.problems.join("; ")
        ))
    }
}

/// Turns the outcome of reading the body into checks passed and problems named.
fn verify(path: &Path, header: Header, result: Result<testkeeper_server::core::state::State, SnapshotError>) -> Report {
    let mut problems = Vec::new();
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    if let Some(named) = name.strip_prefix("snapshot_").and_then(|n| n.strip_suffix(".bin.zst")) {
        if named.parse::<u64>().ok() != Some(header.index) {
            problems.push(format!("the file name says index {named}, the snapshot holds {}", header.index));
        }
    }
    let (mut checksum_ok, mut digest_ok, mut sessions) = (true, None, None);
    match result {
        Ok(state) => {
            sessions = Some(state.sessions().iter().map(|(id, s)| (*id, s.timeout_ms)).collect());
            match header.digest_version {
                0 => {}
                v if v == DIGEST_VERSION => digest_ok = Some(true),
                v => problems.push(format!(
                    "digest version {v} is not the one this build computes ({DIGEST_VERSION}): the digest was not verified"
                )),
            }
        }
        Err(e @ SnapshotError::Checksum { .. }) => {
            checksum_ok = false;
            problems.push(e.to_string());
        }
        Err(e @ SnapshotError::Digest { .. }) => {
            digest_ok = Some(false);
            problems.push(e.to_string());
        }
        Err(e @ SnapshotError::Format(_)) => problems.push(e.to_string()),
    }
    Report { header, sessions, checksum_ok, digest_ok, problems }
}

fn report_text(path: &Path, r: &Report) -> String {
    let h = &r.header;
    let digest = match (h.digest_version, r.digest_ok) {
        (0, _) => "not kept (the server ran with --no-digest)".to_string(),
        (_, Some(true)) => format!("{} (recomputed from the tree: equal)", h.digest),
        (_, Some(false)) => format!("{} (recomputed from the tree: DIFFERS)", h.digest),
        (_, None) => format!("{} (not verified)", h.digest),
    };
    let mut s = format!(
        "file: {}\nformat version: 1\nindex: {}\nterm: {}\nzxid: {:#x}\ndigest version: {}\ndigest: {digest}\n\
         next session id: {:#x}\nnode count: {}\nchecksum: {}\n",
        path.display(),
        h.index,
        h.term,
        h.zxid,
        h.digest_version,
        h.next_session_id,
        h.node_count,
        if r.checksum_ok { "ok" } else { "MISMATCH" },
    );
    match &r.sessions {
        Some(list) => {
            s.push_str(&format!("sessions: {}\n", list.len()));
            for (id, timeout) in list {
                s.push_str(&format!("  {id:#x} timeout {timeout} ms\n"));
            }
        }
        None => s.push_str("sessions: not read (the body does not verify)\n"),
    }
    s.push_str(&if r.problems.is_empty() { "verified: yes\n".to_string() } else { "verified: NO\n".to_string() });
    s
}

/// The summary as JSON, fields in the order the text prints them.
#[derive(Serialize)]
struct SummaryJson {
    file: String,
    format_version: u8,
    index: String,
    term: String,
    zxid: String,
    digest_version: u8,
    digest: String,
    next_session_id: String,
    node_count: String,
    sessions: Option<Vec<SessionJson>>,
    checksum_ok: bool,
    digest_ok: Option<bool>,
    verified: bool,
    problems: Vec<String>,
}

#[derive(Serialize)]
struct SessionJson {
    id: String,
    timeout_ms: i32,
}

fn report_json(path: &Path, r: &Report) -> SummaryJson {
    let h = &r.header;
    SummaryJson {
        file: path.display().to_string(),
        format_version: 1,
        index: h.index.to_string(),
        term: h.term.to_string(),
        zxid: format!("{:#x}", h.zxid),
        digest_version: h.digest_version,
        digest: h.digest.to_string(),
        next_session_id: format!("{:#x}", h.next_session_id),
        node_count: h.node_count.to_string(),
        sessions: r
            .sessions
            .as_ref()
            .map(|l| l.iter().map(|(id, t)| SessionJson { id: format!("{id:#x}"), timeout_ms: *t }).collect()),
        checksum_ok: r.checksum_ok,
        digest_ok: r.digest_ok,
        verified: r.problems.is_empty(),
        problems: r.problems.clone(),
    }
}

/// One node of `--dump`, path first.
#[derive(Serialize)]
struct NodeJson<'a> {
    path: &'a str,
    /// UTF-8 text, or base64 when `data_base64`; null for null data.
    data: Option<String>,
    data_base64: bool,
    acl: Vec<AclJson<'a>>,
    czxid: String,
    mzxid: String,
    ctime: String,
    mtime: String,
    version: i32,
    cversion: i32,
    aversion: i32,
    pzxid: String,
    ephemeral_owner: String,
    ttl: String,
    /// The sequential-suffix counter (children ever created under it).
    seq: String,
}

#[derive(Serialize)]
struct AclJson<'a> {
    perms: i32,
    scheme: &'a str,
    id: &'a str,
}

/// One node as a JSON line: data as UTF-8 text when it is valid UTF-8, else base64.
fn node_json(n: &DumpedNode) -> String {
    let (data, data_base64) = match &n.data {
        None => (None, false),
        Some(d) => match std::str::from_utf8(d) {
            Ok(s) => (Some(s.to_string()), false),
            Err(_) => (Some(base64::engine::general_purpose::STANDARD.encode(d)), true),
        },
    };
    // Copied out: the stat is packed, its fields cannot be borrowed.
    let s = n.stat;
    let line = NodeJson {
        path: &n.path,
        data,
        data_base64,
        acl: n.acl.iter().map(|a| AclJson { perms: a.perms, scheme: &a.id.scheme, id: &a.id.id }).collect(),
        czxid: format!("{:#x}", { s.czxid }),
        mzxid: format!("{:#x}", { s.mzxid }),
        ctime: { s.ctime }.to_string(),
        mtime: { s.mtime }.to_string(),
        version: s.version,
        cversion: s.cversion,
        aversion: s.aversion,
        pzxid: format!("{:#x}", { s.pzxid }),
        ephemeral_owner: format!("{:#x}", n.owner),
        ttl: n.ttl.to_string(),
        seq: n.seq.to_string(),
    };
    serde_json::to_string(&line).expect("a node serializes")
}
