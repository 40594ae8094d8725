//! Reads scenario files (`conformance/scenarios/*.txt`) and the text form of ops and steps,
//! the same text transcripts show in their `op` field (`Display` of [`Op`] and [`Step`]).
//!
//! ```text
//! # a comment
//! ## create_then_get                      <- a scenario starts; the name is [a-z0-9_]
//! about: A create, then a read of it.     <- required
//! source: ZooKeeper DataTree.createNode   <- required: where the behaviour comes from
//! nodes: 3                                <- optional: a cluster scenario needs 3 servers
//! place: s1@1 s2@2                        <- optional: session 1 on node 1, 2 on node 2
//! s0 create ~/a "one"                     <- a step: session, then the op
//! s1 get ~/a watch
//! ```
//!
//! Defaults keep files short: `flags=0`, `v=-1`, `acl=open`, `connect timeout_ms=30000`.

use std::collections::BTreeMap;

use testkeeper_wire::OpCode;

use crate::ops::{AclSpec, Op};
use crate::scenario::{Race, Scenario, Step};

/// What is wrong with a scenario file, a step or an op, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The file and its 1-based line, when reading a file (line 0: the scenario as a whole).
    pub at: Option<(String, usize)>,
    pub what: String,
}

impl SyntaxError {
    fn plain(what: String) -> SyntaxError {
        SyntaxError { at: None, what }
    }
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            None => f.write_str(&self.what),
            Some((file, 0)) => write!(f, "{file}: {}", self.what),
            Some((file, line)) => write!(f, "{file}:{line}: {}", self.what),
        }
    }
}

impl std::error::Error for SyntaxError {}

/// Inside the parser, where errors are still text on their way to a line number.
impl From<SyntaxError> for String {
    fn from(e: SyntaxError) -> String {
        e.to_string()
    }
}

/// Reads every scenario of one file.
///
/// # Errors
/// `file:line: what is wrong`, for the first bad line.
pub fn scenarios(file: &str, text: &str) -> Result<Vec<Scenario>, SyntaxError> {
    let mut out: Vec<Scenario> = Vec::new();
    let at = |i: usize, what: String| SyntaxError { at: Some((file.to_string(), i + 1)), what };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || (line.starts_with('#') && !line.starts_with("##")) {
            continue;
        }
        if let Some(name) = line.strip_prefix("##") {
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                return Err(at(i, format!("scenario name '{name}' must be [a-z0-9_]+")));
            }
            finish(out.last(), file)?;
            out.push(Scenario {
                name: name.to_string(),
                about: String::new(),
                source: String::new(),
                file: file.to_string(),
                nodes: 1,
                placement: BTreeMap::new(),
                steps: Vec::new(),
            });
            continue;
        }
        let sc = out.last_mut().ok_or_else(|| at(i, "a line before the first '## name'".into()))?;
        let header = line.split_once(':').filter(|(k, _)| ["about", "source", "nodes", "place"].contains(k));
        match header {
            Some(("about", v)) => sc.about = v.trim().to_string(),
            Some(("source", v)) => sc.source = v.trim().to_string(),
            Some(("nodes", v)) => sc.nodes = v.trim().parse().map_err(|_| at(i, format!("nodes '{v}'")))?,
            Some((_, v)) => {
                for p in v.split_whitespace() {
                    let (s, n) = p.split_once('@').ok_or_else(|| at(i, format!("place '{p}' is not sN@K")))?;
                    let (s, n) = (session(s).map_err(|e| at(i, e))?, number(n).map_err(|e| at(i, e))?);
                    sc.placement.insert(s, n as usize);
                }
            }
            None => sc.steps.push(step_text(line).map_err(|e| at(i, e))?),
        }
    }
    finish(out.last(), file)?;
    Ok(out)
}

fn finish(sc: Option<&Scenario>, file: &str) -> Result<(), SyntaxError> {
    let Some(sc) = sc else { return Ok(()) };
    let missing = [("about", sc.about.is_empty()), ("source", sc.source.is_empty()), ("steps", sc.steps.is_empty())];
    match missing.iter().find(|(_, m)| *m) {
        Some((what, _)) => {
            Err(SyntaxError { at: Some((file.to_string(), 0)), what: format!("scenario {} has no {what}", sc.name) })
        }
        None => Ok(()),
    }
}

fn session(tok: &str) -> Result<usize, String> {
    tok.strip_prefix('s').and_then(|n| n.parse().ok()).ok_or_else(|| format!("'{tok}' is not a session (s0, s1...)"))
}

fn number(tok: &str) -> Result<i64, String> {
    tok.parse().map_err(|_| format!("'{tok}' is not a number"))
}

/// One step line: `sN OP`, `sN connect|close|drop|resume|expire|wait-gone`, `4lw WORD`,
/// `raw op=N body=HEX`, `race KIND ...`.
///
/// # Errors
/// What is wrong with the line.
pub fn step(line: &str) -> Result<Step, SyntaxError> {
    step_text(line).map_err(SyntaxError::plain)
}

fn step_text(line: &str) -> Result<Step, String> {
    let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let t = Tokens::split(rest)?;
    match first {
        "4lw" => {
            let word = t.name().to_string();
            if word.len() != 4 || !word.chars().all(|c| c.is_ascii_lowercase()) {
                return Err(format!("'{word}' is not a four-letter word"));
            }
            Ok(Step::FourLetter { word, node: t.num_or("node", 0)? as usize })
        }
        "raw" => {
            let body = t.kv.get("body").copied().unwrap_or("");
            let body = crate::proxy::record::unhex(body).map_err(|e| format!("body '{body}': {e}"))?;
            Ok(Step::Raw { op: t.num("op")? as i32, body })
        }
        "race" => race(&t),
        s => {
            let n = session(s)?;
            let node = t.kv.get("node").map(|v| number(v).map(|x| x as usize)).transpose()?;
            Ok(match t.name() {
                "connect" => Step::Connect { session: n, timeout_ms: t.num_or("timeout_ms", 30_000)? as i32, node },
                "close" => Step::Close(n),
                "drop" => Step::Drop(n),
                "expire" => Step::Expire(n),
                "resume" => Step::Resume { session: n, node },
                "wait-gone" => Step::WaitGone(n, t.pos(0, "a path")?.to_string()),
                _ => Step::Do(n, op_text(rest)?),
            })
        }
    }
}

fn race(t: &Tokens<'_>) -> Result<Step, String> {
    let sessions = t.num("sessions")? as usize;
    let path = t.pos(0, "a path")?.to_string();
    Ok(Step::Race(match t.name() {
        "lock" => Race::Lock { sessions, path },
        "sequential" => Race::Sequential { sessions, per_session: t.num("each")? as usize, prefix: path },
        "counter" => Race::Counter { sessions, per_session: t.num("each")? as usize, path },
        other => return Err(format!("unknown race '{other}' (lock, sequential, counter)")),
    }))
}

/// One op in its text form, e.g. `create ~/a "x" flags=2` or `multi [check ~/a v=0; delete ~/a]`.
///
/// # Errors
/// An unknown op, a missing argument or a malformed value.
pub fn op(text: &str) -> Result<Op, SyntaxError> {
    op_text(text).map_err(SyntaxError::plain)
}

fn op_text(text: &str) -> Result<Op, String> {
    let t = Tokens::split(text)?;
    let path = || t.pos(0, "a path").map(str::to_string);
    let data = || t.pos(1, "data (\"...\")").and_then(quoted);
    let v = || t.num_or("v", -1).map(|v| v as i32);
    let watch = t.flags.contains(&"watch");
    let create_as = |op| -> Result<Op, String> {
        Ok(Op::CreateAs {
            op,
            path: path()?,
            data: data()?,
            flags: t.num_or("flags", 0)? as i32,
            ttl: t.num_or("ttl", 0)?,
        })
    };
    let list = |key: &str| t.kv.get(key).map_or(Ok(Vec::new()), |v| string_list(v));
    Ok(match t.name() {
        "create" => Op::Create {
            path: path()?,
            data: data()?,
            flags: t.num_or("flags", 0)? as i32,
            acl: t.kv.get("acl").map_or(Ok(AclSpec::Open), |a| AclSpec::parse(a))?,
        },
        "create2" => create_as(OpCode::Create2)?,
        "createContainer" => create_as(OpCode::CreateContainer)?,
        "createTTL" => create_as(OpCode::CreateTtl)?,
        "createIfNotExists" => create_as(OpCode::CreateIfNotExists)?,
        "delete" => Op::Delete { path: path()?, version: v()? },
        "exists" => Op::Exists { path: path()?, watch },
        "get" => Op::Get { path: path()?, watch },
        "set" => Op::Set { path: path()?, data: data()?, version: v()? },
        "children" => Op::Children { path: path()?, watch },
        "children2" => Op::Children2 { path: path()?, watch },
        "getAcl" => Op::GetAcl { path: path()? },
        "setAcl" => Op::SetAcl { path: path()?, acl: AclSpec::parse(t.pos(1, "an ACL")?)?, version: v()? },
        "sync" => Op::Sync { path: path()? },
        "check" => Op::Check { path: path()?, version: t.num("v")? as i32 },
        "multi" | "multiRead" => {
            let group = t.pos(0, "[op; op; ...]")?;
            let inner = group
                .strip_prefix('[')
                .and_then(|g| g.strip_suffix(']'))
                .ok_or_else(|| format!("'{group}' is not [op; op; ...]"))?;
            let ops = split_top(inner, ';')
                .iter()
                .filter(|s| !s.trim().is_empty())
                .map(|s| op_text(s.trim()))
                .collect::<Result<_, _>>()?;
            if t.name() == "multi" {
                Op::Multi(ops)
            } else {
                Op::MultiRead(ops)
            }
        }
        "addAuth" => Op::Auth { scheme: t.pos(0, "a scheme")?.to_string(), auth: data()? },
        "addWatch" => Op::AddWatch { path: path()?, mode: t.num("mode")? as i32 },
        "setWatches" => Op::SetWatches {
            since_start: match t.kv.get("zxid").copied() {
                Some("0") => true,
                Some("max") => false,
                other => return Err(format!("setWatches zxid={other:?}: use 0 or max")),
            },
            data: list("data")?,
            exist: list("exist")?,
            child: list("child")?,
        },
        "checkWatches" => Op::CheckWatches { path: path()?, kind: t.num("type")? as i32 },
        "removeWatches" => Op::RemoveWatches { path: path()?, kind: t.num("type")? as i32 },
        "getEphemerals" => Op::GetEphemerals { path: path()? },
        "getAllChildrenNumber" => Op::GetAllChildrenNumber { path: path()? },
        "whoAmI" => Op::WhoAmI,
        "checkNotExists" => Op::CheckNotExists { path: path()? },
        "tryRemove" => Op::TryRemove { path: path()?, version: v()? },
        "removeRecursive" => Op::RemoveRecursive { path: path()?, limit: t.num("limit")? as u32 },
        "filteredList" => Op::FilteredList { path: path()?, list_type: t.num_or("type", 0)? as u8 },
        "checkStat" => Op::CheckStat { path: path()?, version: v()? },
        "listRecursive" => Op::ListRecursive { path: path()?, limit: t.num_or("limit", 0)? as u32 },
        other => return Err(format!("unknown op '{other}'")),
    })
}

/// A line split into its name, positional arguments, bare flags (`watch`) and `key=value`s.
struct Tokens<'a> {
    words: Vec<&'a str>,
    flags: Vec<&'a str>,
    kv: BTreeMap<&'a str, &'a str>,
}

impl<'a> Tokens<'a> {
    fn split(text: &'a str) -> Result<Tokens<'a>, String> {
        let mut t = Tokens { words: Vec::new(), flags: Vec::new(), kv: BTreeMap::new() };
        for tok in split_top(text, ' ').into_iter().filter(|s| !s.is_empty()) {
            match tok.split_once('=') {
                // A key is a plain word: `~/data/AQAAAAAAAAA=` is a path, not a key.
                Some((k, v)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    t.kv.insert(k, v);
                }
                _ if tok == "watch" => t.flags.push(tok),
                _ => t.words.push(tok),
            }
        }
        Ok(t)
    }

    fn name(&self) -> &'a str {
        self.words.first().copied().unwrap_or("")
    }

    fn pos(&self, i: usize, what: &str) -> Result<&'a str, String> {
        self.words.get(i + 1).copied().ok_or_else(|| format!("{} needs {what}", self.name()))
    }

    fn num(&self, key: &str) -> Result<i64, String> {
        self.kv.get(key).ok_or_else(|| format!("{} needs {key}=N", self.name())).and_then(|v| number(v))
    }

    fn num_or(&self, key: &str, default: i64) -> Result<i64, String> {
        self.kv.get(key).map_or(Ok(default), |v| number(v))
    }
}

/// Splits at `sep` outside quotes and brackets.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let (mut out, mut start, mut depth, mut quote, mut escape) = (Vec::new(), 0, 0i32, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escape => escape = false,
            '\\' if quote => escape = true,
            '"' => quote = !quote,
            '[' if !quote => depth += 1,
            ']' if !quote => depth -= 1,
            c if c == sep && !quote && depth == 0 => {
                out.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// A `"..."` string in Rust's `{:?}` escaping (what `Display` of an op writes).
fn quoted(tok: &str) -> Result<String, String> {
    let inner = tok
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|_| tok.len() >= 2)
        .ok_or_else(|| format!("'{tok}' is not a \"quoted\" string"))?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some(c @ ('"' | '\\' | '\'')) => out.push(c),
            Some('u') => {
                let hex: String = chars.by_ref().skip(1).take_while(|c| *c != '}').collect();
                let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                out.push(ch.ok_or_else(|| format!("bad \\u{{{hex}}} in {tok}"))?);
            }
            other => return Err(format!("bad escape \\{} in {tok}", other.unwrap_or(' '))),
        }
    }
    Ok(out)
}

/// `["a", "b"]`.
fn string_list(v: &str) -> Result<Vec<String>, String> {
    let inner =
        v.strip_prefix('[').and_then(|x| x.strip_suffix(']')).ok_or_else(|| format!("'{v}' is not [\"...\", ...]"))?;
    split_top(inner, ',').iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(quoted).collect()
}

#[cfg(test)]
mod tests;
