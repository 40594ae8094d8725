//! Transcripts: one JSON line per step, normalized so two servers' runs compare.
//!
//! Normalization (done once per scenario, after the run):
//! - the scenario's subtree `<root>/<name>` becomes `~` in every string, so the random root
//!   never shows;
//! - zxids (`czxid`, `mzxid`, `pzxid`, and a write's reply `zxid`) become ranks: `pre` for
//!   anything at or before the scenario started, then `z1`, `z2`... in numeric order of the
//!   distinct values the scenario saw. Ranks keep every ordering fact ("mzxid > czxid",
//!   "both ops share one zxid") and drop the absolute values, which differ between servers
//!   (ZooKeeper spends zxids on sessions, Keeper does not);
//! - session ids become `s0`, `s1`... (done by the runner, which knows them), times become
//!   the fact `ctime==mtime`, and children lists are sorted;
//! - what a scenario reads outside `~` (the root and the system nodes) keeps only what does
//!   not depend on the deployment: the root's child count, cversion and pzxid, its children
//!   other than the system nodes, quotas and the ensemble's dynamic config are masked
//!   ([`mask_foreign`]), so a server full of someone else's data, or the same server a second
//!   time, reads the same.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::ops::Op;

/// What a masked, deployment-dependent value reads as.
pub const MASKED: &str = "(deployment)";

/// Children of `/` that belong to the servers themselves; any other child is someone's data.
const SYSTEM_CHILDREN: [&str; 2] = ["keeper", "zookeeper"];

/// Keys whose numbers are zxids.
const ZXID_KEYS: [&str; 4] = ["czxid", "mzxid", "pzxid", "zxid"];

/// One step of one scenario, as it goes into a transcript file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub scenario: String,
    pub step: usize,
    /// `s0`, `s1`..., or `race` for a concurrent step.
    pub session: String,
    /// The op in the catalogue's text form (see `Op`'s Display).
    pub op: String,
    /// `{"err": NAME}`, or the reply's fields.
    pub result: Value,
    /// Watch events every session got because of this step: `s1 NodeDataChanged ~/a`, in
    /// session order and, within a session, arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
}

/// The first line of a transcript file: who produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub server: String,
    pub flavor: String,
    pub recorded_with: String,
}

/// Rewrites raw lines in place: root stripped, zxids ranked (see the module docs).
pub fn normalize(lines: &mut [Line], base_path: &str, base_zxid: i64) {
    let mut seen = BTreeSet::new();
    for l in lines.iter() {
        collect_zxids(&l.result, base_zxid, &mut seen);
    }
    let ranks: BTreeMap<i64, String> = seen.into_iter().enumerate().map(|(i, z)| (z, format!("z{}", i + 1))).collect();
    for l in lines.iter_mut() {
        rewrite(&mut l.result, base_path, &ranks);
        for e in &mut l.events {
            *e = strip(e, base_path);
        }
        l.op = strip(&l.op, base_path);
    }
}

/// Masks, in the result of `op`, what depends on the deployment rather than on the scenario
/// (see the module docs). Only single-path ops on absolute paths are touched.
pub fn mask_foreign(op: &Op, result: &mut Value) {
    let paths = op.paths();
    let [path] = paths.as_slice() else { return };
    mask_foreign_at(path, result);
}

/// [`mask_foreign`] for a reply to a request on `path` (the proxy and replay, which see wire
/// requests rather than scenario ops).
pub fn mask_foreign_at(path: &str, result: &mut Value) {
    let masked = |v: &mut Value, keys: &[&str]| {
        for k in keys {
            if let Some(x) = v.get_mut("stat").and_then(|s| s.get_mut(*k)) {
                *x = json!(MASKED);
            }
        }
    };
    match path {
        "/" => {
            masked(result, &["cversion", "numChildren", "pzxid"]);
            if let Some(Value::Array(kids)) = result.get_mut("children") {
                kids.retain(|k| k.as_str().is_some_and(|k| SYSTEM_CHILDREN.contains(&k)));
            }
        }
        "/zookeeper/quota" => {
            masked(result, &["cversion", "numChildren", "pzxid"]);
            if let Some(kids) = result.get_mut("children") {
                *kids = json!(MASKED);
            }
        }
        "/zookeeper/config" => {
            masked(result, &["dataLength", "version", "mzxid", "times"]);
            if let Some(d) = result.get_mut("data") {
                *d = json!(MASKED);
            }
        }
        _ => {}
    }
}

fn strip(s: &str, base_path: &str) -> String {
    s.replace(base_path, "~")
}

fn collect_zxids(v: &Value, base: i64, out: &mut BTreeSet<i64>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (ZXID_KEYS.contains(&k.as_str()), v.as_i64()) {
                    (true, Some(z)) if z > base => {
                        out.insert(z);
                    }
                    _ => collect_zxids(v, base, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_zxids(i, base, out)),
        _ => {}
    }
}

fn rewrite(v: &mut Value, base_path: &str, ranks: &BTreeMap<i64, String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match (ZXID_KEYS.contains(&k.as_str()), v.as_i64()) {
                    (true, Some(z)) => {
                        *v = json!(ranks.get(&z).cloned().unwrap_or_else(|| "pre".to_string()));
                    }
                    _ => rewrite(v, base_path, ranks),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| rewrite(i, base_path, ranks)),
        Value::String(s) => *s = strip(s, base_path),
        _ => {}
    }
}

/// Writes a transcript file: the meta line, then every line.
///
/// # Errors
/// Any I/O error.
pub fn write_file(path: &Path, meta: &Meta, lines: &[Line]) -> std::io::Result<()> {
    let mut out = serde_json::to_string(&json!({ "meta": meta }))?;
    out.push('\n');
    for l in lines {
        out.push_str(&serde_json::to_string(l)?);
        out.push('\n');
    }
    std::fs::write(path, out)
}

/// Reads a transcript file written by [`write_file`].
///
/// # Errors
/// I/O errors, and a line that is not a transcript line (with its number).
pub fn read_file(path: &Path) -> Result<(Meta, Vec<Line>), crate::jsonl::JsonlError> {
    crate::jsonl::read(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zxids_become_ranks_and_the_root_goes() {
        let mut lines = vec![Line {
            scenario: "x".into(),
            step: 0,
            session: "s0".into(),
            op: "create /r/x/a \"\" flags=0".into(),
            result: json!({"path": "/r/x/a", "zxid": 107, "stat": {"czxid": 107, "mzxid": 109, "pzxid": 5}}),
            events: vec!["s1 NodeCreated /r/x/a".into()],
        }];
        normalize(&mut lines, "/r/x", 100);
        assert_eq!(lines[0].op, "create ~/a \"\" flags=0");
        assert_eq!(
            lines[0].result,
            json!({"path": "~/a", "zxid": "z1", "stat": {"czxid": "z1", "mzxid": "z2", "pzxid": "pre"}})
        );
        assert_eq!(lines[0].events, vec!["s1 NodeCreated ~/a".to_string()]);
    }

    #[test]
    fn foreign_data_in_the_root_is_masked() {
        let op = crate::parse::op("children2 /").unwrap();
        let mut v = json!({"children": ["conformance-1", "keeper", "theirs", "zookeeper"],
            "stat": {"cversion": 7, "numChildren": 4, "pzxid": 9, "version": 0}});
        mask_foreign(&op, &mut v);
        assert_eq!(
            v,
            json!({"children": ["keeper", "zookeeper"],
            "stat": {"cversion": MASKED, "numChildren": MASKED, "pzxid": MASKED, "version": 0}})
        );
        let mut w = json!({"stat": {"cversion": 1}});
        mask_foreign(&crate::parse::op("exists ~/a").unwrap(), &mut w);
        assert_eq!(w, json!({"stat": {"cversion": 1}}));
    }
}
