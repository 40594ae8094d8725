//! The docs' fenced blocks that are not `testkeeper` commands, checked as a reader would use
//! them: every block in a parseable language parses (XML with roxmltree, JSON with serde_json,
//! TOML and Python with the interpreter's own `tomllib` and `ast`), every shell block passes
//! `bash -n`, and no document cites a path outside this repository (the docs must stand alone:
//! they cite public sources or this repository's tests).

use std::path::{Path, PathBuf};
use std::process::Command;

use testkeeper_tests::env::repo_root;
use testkeeper_tests::process::run_bounded;

/// One fenced block: where it opens, its language tag, its text.
pub struct Block {
    pub at: String,
    pub lang: String,
    pub text: String,
}

/// Markdown files a reader follows: README.md, docs/ (with its subdirectories), and the
/// READMEs next to the code.
pub fn doc_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut md = Vec::new();
    let mut dirs = vec![root.join("docs")];
    while let Some(d) = dirs.pop() {
        for p in std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()) {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                md.push(p);
            }
        }
    }
    md.sort();
    let mut files = vec![root.join("README.md")];
    files.extend(md);
    for dir in ["clients/python", "clients/java", "fuzz", "compose", "conformance", "tests"] {
        let readme = root.join(dir).join("README.md");
        if readme.exists() {
            files.push(readme);
        }
    }
    files
}

/// The fenced blocks of `path`, in order.
pub fn blocks_in(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(repo_root()).unwrap().display().to_string();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        match (line.trim_start().strip_prefix("```"), open.take()) {
            (Some(lang), None) => {
                open =
                    Some(Block { at: format!("{name}:{}", n + 1), lang: lang.trim().to_string(), text: String::new() })
            }
            (Some(_), Some(done)) => out.push(done),
            (None, Some(mut b)) => {
                b.text.push_str(line);
                b.text.push('\n');
                open = Some(b);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{name}: a fenced block is never closed");
    out
}

/// Runs `python3 -c CODE` with the block on stdin; the error text if it fails.
fn python_check(code: &str, input: &str) -> Result<(), String> {
    let out =
        run_bounded(Command::new("python3").args(["-c", code]), input.as_bytes(), std::time::Duration::from_secs(30))
            .map_err(|e| format!("python3: {e}"))?;
    if out.success() {
        Ok(())
    } else {
        Err(out.combined())
    }
}

/// Whether the block parses in its language; `None` for languages that are not checked here
/// (Rust and Java blocks are compiled by the examples and tests they are copied from; `text`
/// is prose).
pub fn check(b: &Block) -> Option<Result<(), String>> {
    Some(match b.lang.as_str() {
        "xml" => roxmltree::Document::parse(&b.text).map(|_| ()).map_err(|e| e.to_string()),
        "json" => serde_json::from_str::<serde_json::Value>(&b.text).map(|_| ()).map_err(|e| e.to_string()),
        "toml" => python_check("import sys, tomllib; tomllib.loads(sys.stdin.read())", &b.text),
        "python" => python_check("import ast, sys; ast.parse(sys.stdin.read())", &b.text),
        "sh" | "bash" | "shell" | "console" => {
            let script: String = b.text.lines().map(|l| l.strip_prefix("$ ").unwrap_or(l).to_string() + "\n").collect();
            let out =
                run_bounded(Command::new("bash").arg("-n"), script.as_bytes(), std::time::Duration::from_secs(30))
                    .map_err(|e| format!("bash: {e}"));
            match out {
                Ok(o) if o.success() => Ok(()),
                Ok(o) => Err(o.combined()),
                Err(e) => Err(e),
            }
        }
        _ => return None,
    })
}

/// Citations of material outside the repository, which a reader of the docs cannot follow.
pub const OUTSIDE: [&str; 5] = ["../shared", "shared/reference", "shared/seeds", "/work/", "seeds/0"];

#[test]
fn every_block_in_a_parseable_language_parses() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in doc_files() {
        for b in blocks_in(&f) {
            match check(&b) {
                Some(Ok(())) => checked += 1,
                Some(Err(e)) => bad.push(format!("{} ({}): {e}", b.at, b.lang)),
                None => {}
            }
        }
    }
    assert!(bad.is_empty(), "blocks that do not parse:\n{}", bad.join("\n"));
    // The docs have XML, TOML, Python and shell blocks today; none of them may drop out unseen.
    assert!(checked >= 25, "only {checked} blocks checked: did the extraction break?");
}

#[test]
fn the_docs_cite_nothing_outside_the_repository() {
    let mut bad = Vec::new();
    for f in doc_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(hit) = OUTSIDE.iter().find(|p| line.contains(*p)) {
                bad.push(format!("{}:{}: cites {hit:?}: {line}", f.display(), n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "cite a public source or a test here instead:\n{}", bad.join("\n"));
}

#[test]
fn a_broken_block_is_caught() {
    let b = |lang: &str, text: &str| Block { at: "x".into(), lang: lang.into(), text: text.into() };
    // The docs/cluster.md mistake this test was written for: `--` inside an XML comment.
    assert!(check(&b("xml", "<a><!-- or --id --></a>")).unwrap().is_err());
    assert!(check(&b("xml", "<a><!-- fine --></a>")).unwrap().is_ok());
    assert!(check(&b("toml", "[x]\ny = \n")).unwrap().is_err());
    assert!(check(&b("python", "def f(:\n")).unwrap().is_err());
    assert!(check(&b("sh", "if true; then\n")).unwrap().is_err());
    assert!(check(&b("sh", "$ echo ok\n")).unwrap().is_ok());
    assert!(check(&b("rust", "fn")).is_none());
    let parsed = blocks_in(&repo_root().join("docs/cluster.md"));
    assert!(parsed.iter().any(|b| b.lang == "xml" && b.text.contains("<keeper_server>")));
}
