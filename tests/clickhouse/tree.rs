//! The znodes ClickHouse left behind (`zktree.py`, through kazoo), with per-run values
//! masked, and their comparison across servers.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use testkeeper_tests::env::venv_python;
use testkeeper_tests::process::run_bounded;

use super::script;

/// Upper bound for one `zktree.py` dump (a few hundred znodes take < 2 s).
const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// One znode from `zktree.py`.
#[derive(Debug, Clone)]
pub struct ZNode {
    pub path: String,
    /// The path with UUIDs and per-run values masked.
    pub norm: String,
    pub ephemeral: bool,
    pub data: String,
}

/// The whole tree of the server at `hosts`, each `(text, name)` in `masks`
/// replaced by `<name>` in the normalized paths.
pub fn dump_tree(hosts: &str, masks: &[(&str, &str)]) -> Result<Vec<ZNode>, String> {
    let mut cmd = Command::new(venv_python());
    cmd.arg(script("zktree.py")).arg(hosts);
    for (text, name) in masks {
        cmd.arg("--mask").arg(format!("{text}={name}"));
    }
    let out = run_bounded(&mut cmd, b"", DUMP_TIMEOUT).map_err(|e| format!("zktree.py: {e}"))?;
    if !out.success() {
        return Err(format!(
            "zktree.py against {hosts} failed ({:?}, timed out: {}):\n{}",
            out.status,
            out.timed_out(),
            out.stderr
        ));
    }
    let v: Value = serde_json::from_str(out.stdout.trim()).map_err(|e| format!("zktree.py output is not JSON: {e}"))?;
    Ok(tree_from_json(&v))
}

/// Parses the tree embedded in a workload report (same shape as above).
pub fn tree_from_json(v: &Value) -> Vec<ZNode> {
    v.as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|n| ZNode {
            path: n["path"].as_str().unwrap_or_default().to_string(),
            norm: n["norm"].as_str().unwrap_or_default().to_string(),
            ephemeral: n["ephemeral"].as_bool().unwrap_or_default(),
            data: n["data"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

pub fn find<'a>(tree: &'a [ZNode], path: &str) -> Option<&'a ZNode> {
    tree.iter().find(|n| n.path == path)
}

/// Names of the direct children of `path`.
pub fn children<'a>(tree: &'a [ZNode], path: &str) -> Vec<&'a str> {
    let prefix = format!("{}/", path.trim_end_matches('/'));
    tree.iter().filter_map(|n| n.path.strip_prefix(&prefix)).filter(|rest| !rest.contains('/')).collect()
}

/// The servers' own znodes, which differ by design between Keeper and
/// ZooKeeper (`/keeper/api_version`, `/zookeeper/config`, ...), are left
/// out of comparisons.
fn is_system(norm: &str) -> bool {
    ["/keeper", "/zookeeper"].iter().any(|p| norm == *p || norm.starts_with(&format!("{p}/")))
}

/// Differences between the normalized trees (path and ephemeral flag),
/// one line each; empty when they agree.
pub fn tree_diff(ours: &[ZNode], reference: &[ZNode]) -> Vec<String> {
    let index = |t: &[ZNode]| -> BTreeMap<String, bool> {
        t.iter().filter(|n| !is_system(&n.norm)).map(|n| (n.norm.clone(), n.ephemeral)).collect()
    };
    let (a, b) = (index(ours), index(reference));
    let mut diff = Vec::new();
    for (path, eph) in &a {
        match b.get(path) {
            None => diff.push(format!("only on testkeeper: {path}")),
            Some(e) if e != eph => diff.push(format!("{path}: ephemeral={eph} on testkeeper, {e} on ZooKeeper")),
            Some(_) => {}
        }
    }
    for path in b.keys().filter(|p| !a.contains_key(*p)) {
        diff.push(format!("only on ZooKeeper: {path}"));
    }
    diff
}
