//! Every `testkeeper` command in README.md and docs/*.md, checked against the binary:
//!
//! 1. **Parses.** Each command line of a fenced block (and each inline `testkeeper ...` span
//!    that is a whole command) goes through the binary's own flag parsing
//!    (`TESTKEEPER_PARSE_ONLY=1`), so every flag, value, fault rule and address in it is checked
//!    as a real run would check it. Addresses are pointed at a live server (`--target`,
//!    `--upstream`, `--admin`, ... get its address; `--listen` and `--http` port 0); the
//!    placeholders `N`, `FILE`, `DIR`, `RULE`, `SEQ`, `ID`, `PNG` get a value; a synopsis's
//!    optional `[...]` parts are left out and `a|b` takes `a`.
//! 2. **Runs.** The commands that need nothing but testkeeper run for real, in the order the
//!    docs give them, against one `serve --http` with three client sessions: `serve` until it
//!    prints its listening line, `faults`, `digest`, `publish` (one publication, and a chaos
//!    run with `--index`), and the `curl` lines of the HTTP docs. Each must exit 0.
//!    `conform`, `proxy`, `replay`, `bench` and the full chaos sweep are parsed only: they need
//!    a reference server or a recording, or run for minutes; their own tests run them.
//! 3. **Flags.** Every flag in the flag tables of docs/cli.md exists in `--help`, and every flag
//!    `serve --help` and `bench --help` list is in those tables.
//! 4. **Blocks and citations** (`docs_commands/blocks.rs`): XML, JSON, TOML, Python and shell
//!    blocks parse, and no doc cites a path outside the repository.

#[path = "docs_commands/blocks.rs"]
mod blocks;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use testkeeper_tests::env::{repo_root, testkeeper_bin};
use testkeeper_tests::process::run_bounded;
use testkeeper_wire::client::{Client, ConnectOptions};

const SUBCOMMANDS: [&str; 12] = [
    "serve", "digest", "publish", "bench", "conform", "proxy", "replay", "faults", "snapshot", "chaos", "sim", "client",
];

/// A documented command: where it is, and its words.
#[derive(Debug, Clone)]
struct Doc {
    at: String,
    words: Vec<String>,
    /// The fenced block it is in (a block that starts a `serve --http` gets a server of its
    /// own, as its reader would start one), or `None` inline.
    block: Option<usize>,
}

/// Shell-like words: single and double quotes, backslash-newline continuations already joined.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Leaves out a synopsis's `[...]` groups and takes the first of `a|b`.
fn desynopsis(line: &str) -> String {
    let (mut out, mut depth) = (String::new(), 0);
    for c in line.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace()
        .map(|w| if w.contains('|') && !w.contains('=') { w.split('|').next().unwrap_or(w) } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The testkeeper and curl commands of one Markdown file.
fn commands_in(path: &Path) -> Vec<Doc> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(repo_root()).unwrap().display().to_string();
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut pending = String::new();
    // Inline spans may wrap: a paragraph is read whole, from its first line.
    let mut para = (0, String::new());
    let mut blocks = 0;
    let flush = |para: &mut (usize, String), out: &mut Vec<Doc>| {
        for span in para.1.split('`').skip(1).step_by(2) {
            let w = words(span);
            let whole =
                !span.contains("...") && !span.contains('…') && !span.contains('[') && !span.contains(" listening on ");
            if whole && w.len() > 2 && w[0] == "testkeeper" && SUBCOMMANDS.contains(&w[1].as_str()) {
                out.push(Doc { at: format!("{name}:{}", para.0), words: w, block: None });
            }
        }
        para.1.clear();
    };
    for (n, line) in text.lines().enumerate() {
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            flush(&mut para, &mut out);
            fence = if fence.is_some() { None } else { Some(rest.to_string()) };
            blocks += 1;
            continue;
        }
        match &fence {
            Some(lang) if matches!(lang.as_str(), "" | "sh" | "console" | "bash" | "shell") => {
                let l = line.trim().trim_start_matches("$ ");
                if let Some(cont) = l.strip_suffix('\\') {
                    pending.push_str(cont);
                    continue;
                }
                let full = std::mem::take(&mut pending) + l;
                let full = full.split("  #").next().unwrap_or("").trim().trim_end_matches('&').trim().to_string();
                if full.starts_with("testkeeper ") || full.starts_with("curl ") {
                    let block = Some(blocks);
                    out.push(Doc { at: format!("{name}:{}", n + 1), words: words(&desynopsis(&full)), block });
                }
            }
            Some(_) => {}
            None if line.trim().is_empty() => flush(&mut para, &mut out),
            None => {
                if para.1.is_empty() {
                    para.0 = n + 1;
                }
                para.1.push(' ');
                para.1.push_str(line);
            }
        }
    }
    flush(&mut para, &mut out);
    out
}

fn all_docs() -> Vec<Doc> {
    blocks::doc_files().iter().flat_map(|f| commands_in(f)).collect()
}

/// A live server for the commands to point at.
struct Live {
    addr: String,
    admin: String,
    tmp: tempfile::TempDir,
    server: std::process::Child,
    /// Three sessions on connections 1-3 (session 0x1 in keeper flavor): the docs expire 0x1
    /// and drop connection 3.
    _clients: Vec<Client>,
}

impl Live {
    fn start(rt: &tokio::runtime::Runtime) -> Live {
        let (server, addr, admin) = serve_with_http();
        let _clients = rt.block_on(async {
            let mut v = Vec::new();
            for _ in 0..3 {
                v.push(Client::connect(addr.parse().unwrap(), ConnectOptions::default()).await.unwrap());
            }
            v
        });
        let tmp = tempfile::tempdir().unwrap();
        // Commands run in this directory; the docs' example paths under tests/fixtures/ are
        // the repository's.
        std::os::unix::fs::symlink(repo_root().join("tests"), tmp.path().join("tests")).unwrap();
        Live { addr, admin, tmp, server, _clients }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The words with addresses pointed at `live` and placeholders filled.
fn concrete(words: &[String], live: &Live) -> Vec<String> {
    let tmp = live.tmp.path().display().to_string();
    let mut out = Vec::new();
    let mut prev = "";
    for w in words {
        let v = match prev {
            "--listen" | "--http" => "127.0.0.1:0".to_string(),
            "--target" | "--upstream" | "--reference" | "--vs" => live.addr.clone(),
            "--oracle" if w != "embedded" && w != "none" => live.addr.clone(),
            "--admin" => live.admin.clone(),
            _ => match w.as_str() {
                "N" | "SEQ" | "ID" => "1".into(),
                "FILE" | "session.jsonl" => format!("{tmp}/file.json"),
                "DIR" => format!("{tmp}/data"),
                "RULE" => "reset:count=1".into(),
                "PNG" => format!("{tmp}/plot.png"),
                w if w.contains("localhost:HTTP_PORT") || w.contains("127.0.0.1:HTTP_PORT") => {
                    w.replace("localhost:HTTP_PORT", &live.admin[7..]).replace("127.0.0.1:HTTP_PORT", &live.admin[7..])
                }
                w => w.to_string(),
            },
        };
        prev = w.as_str();
        out.push(v);
    }
    out
}

fn serve_with_http() -> (std::process::Child, String, String) {
    let mut child = Command::new(testkeeper_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("testkeeper listening on ").expect("listening line").to_string();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let admin = loop {
        let mut l = String::new();
        assert!(err.read_line(&mut l).unwrap() > 0, "no http line");
        if let Some(a) = l.trim().strip_prefix("testkeeper http listening on ") {
            break format!("http://{a}");
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addr, admin)
}

/// Whether a parsed command is also run for real.
fn runs(words: &[String]) -> bool {
    // A cluster node binds its documented Raft port and waits for its peers: parsed only
    // (tests/tests/cluster_processes.rs runs clusters on free ports).
    let cluster = words.iter().any(|w| matches!(w.as_str(), "--id" | "--peers" | "--cluster-config"));
    match words.get(1).map(String::as_str) {
        Some("serve") if cluster => false,
        Some("serve" | "faults" | "digest") => !words.iter().any(|w| w == "--follow" || w == "--help"),
        Some("publish") => {
            let chaos = words.iter().any(|w| w == "--chaos");
            !words.iter().any(|w| w == "--reference") && (!chaos || words.iter().any(|w| w == "--index"))
        }
        _ => false,
    }
}

#[test]
fn every_documented_command_parses_and_the_self_contained_ones_run() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut live = Live::start(&rt);
    let docs = all_docs();
    assert!(docs.len() > 40, "found only {} commands: the extraction broke", docs.len());
    let mut failures = Vec::new();
    let (mut parsed, mut ran) = (0, 0);
    for (i, d) in docs.iter().enumerate() {
        let starts_block = d.block.is_some() && (i == 0 || docs[i - 1].block != d.block);
        if starts_block && d.words.get(1).is_some_and(|s| s == "serve") && d.words.iter().any(|w| w == "--http") {
            live = Live::start(&rt);
        }
        let w = concrete(&d.words, &live);
        if w[0] == "curl" {
            // -f: an HTTP error is a failure.
            let out = run_bounded(Command::new("curl").arg("-f").args(&w[1..]), b"", Duration::from_secs(30)).unwrap();
            ran += 1;
            if !out.success() {
                failures.push(format!("{}: {} failed: {}", d.at, d.words.join(" "), out.combined()));
            }
            continue;
        }
        let out = run_bounded(
            Command::new(testkeeper_bin()).args(&w[1..]).env("TESTKEEPER_PARSE_ONLY", "1"),
            b"",
            Duration::from_secs(30),
        )
        .unwrap();
        parsed += 1;
        if !out.success() {
            failures.push(format!("{}: `{}` does not parse: {}", d.at, d.words.join(" "), out.stderr.trim()));
            continue;
        }
        if !runs(&w) {
            continue;
        }
        ran += 1;
        let ok = if w[1] == "serve" {
            let mut child = Command::new(testkeeper_bin())
                .args(&w[1..])
                .env("RUST_LOG", "warn")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .current_dir(live.tmp.path())
                .spawn()
                .unwrap();
            let mut line = String::new();
            let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
            let _ = child.kill();
            let _ = child.wait();
            line.starts_with("testkeeper listening on ").then_some(()).ok_or(line)
        } else {
            let out = run_bounded(
                Command::new(testkeeper_bin()).args(&w[1..]).current_dir(live.tmp.path()),
                b"",
                Duration::from_secs(120),
            )
            .unwrap();
            out.success().then_some(()).ok_or(out.combined())
        };
        if let Err(why) = ok {
            failures.push(format!("{}: `{}` failed when run: {why}", d.at, w.join(" ")));
        }
    }
    eprintln!("{} documented commands: {parsed} parsed, {ran} run", docs.len());
    assert!(failures.is_empty(), "{} documented command(s) fail:\n{}", failures.len(), failures.join("\n\n"));
}

/// The `--flag` names in the first column of the tables in the section of docs/cli.md that
/// starts at `heading`.
fn table_flags(heading: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo_root().join("docs/cli.md")).unwrap();
    let section = text.split(heading).nth(1).unwrap().split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `--"))
        .flat_map(|l| {
            l.split('|').nth(1).unwrap().split('`').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>()
        })
        .filter_map(|code| code.split_whitespace().next().filter(|f| f.starts_with("--")).map(str::to_string))
        .collect()
}

fn help_flags(sub: &str) -> BTreeSet<String> {
    let out = Command::new(testkeeper_bin()).args([sub, "--help"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| {
            l.trim().split([',', ' ']).find(|w| w.starts_with("--")).map(|f| f.trim_end_matches('=').to_string())
        })
        .filter(|f| f != "--help" && f != "--version" && f != "--log-format")
        .collect()
}

#[test]
fn the_flag_tables_of_cli_md_match_the_binary() {
    for (sub, heading) in [
        ("serve", "## `testkeeper serve`"),
        ("bench", "## `testkeeper bench`"),
        ("chaos", "## `testkeeper chaos`"),
        ("sim", "## `testkeeper sim`"),
        ("client", "## `testkeeper client`"),
    ] {
        let (documented, actual) = (table_flags(heading), help_flags(sub));
        let missing: Vec<_> = actual.difference(&documented).collect();
        let unknown: Vec<_> = documented.difference(&actual).collect();
        assert!(missing.is_empty(), "{sub}: flags without a row in docs/cli.md: {missing:?}");
        assert!(unknown.is_empty(), "{sub}: documented flags the binary does not have: {unknown:?}");
    }
}

#[test]
fn the_extraction_reads_fences_synopses_and_inline_commands() {
    assert_eq!(words("a 'b c' \"d\" e=f"), vec!["a", "b c", "d", "e=f"]);
    assert_eq!(desynopsis("testkeeper x --a B [--c D] --e f|g"), "testkeeper x --a B --e f");
    let dir = tempfile::tempdir().unwrap();
    let md = repo_root().join("target").join(format!("docs-extract-{}.md", std::process::id()));
    std::fs::write(&md, "Run `testkeeper digest\n--target HOST:PORT` now.\n```sh\ntestkeeper serve \\\n  --seed 7 &   # bg\n```\n```rust\ntestkeeper serve\n```\n").unwrap();
    let found: Vec<Vec<String>> = commands_in(&md).into_iter().map(|d| d.words).collect();
    let _ = std::fs::remove_file(&md);
    drop(dir);
    assert_eq!(
        found,
        vec![vec!["testkeeper", "digest", "--target", "HOST:PORT"], vec!["testkeeper", "serve", "--seed", "7"]]
    );
}
