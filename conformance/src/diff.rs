//! Line-by-line comparison of two transcripts of one scenario.
//!
//! Each line's result and events are flattened to `key = value` pairs (`result.stat.cversion`,
//! `result.results.2.err`, `events`); the keys whose values differ are the difference. A
//! difference is *expected* when the two flavors differ and every differing key is covered by
//! an entry of the known-differences table ([`crate::expected`]) at that line's site.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::expected::{self, Site};
use crate::transcript::Line;

/// One differing key of one line; a side without the key has no value (`None`, left out of
/// the JSON report).
#[derive(Debug, Clone, Serialize)]
pub struct KeyDiff {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<Value>,
}

impl KeyDiff {
    /// `value` (compact JSON) or `(absent)`, for the text renderings.
    pub fn show(v: &Option<Value>) -> String {
        v.as_ref().map_or_else(|| "(absent)".to_string(), Value::to_string)
    }
}

/// One differing line.
#[derive(Debug, Clone, Serialize)]
pub struct LineDiff {
    pub step: usize,
    pub session: String,
    pub op: String,
    pub keys: Vec<KeyDiff>,
    /// The known differences that explain this line, when all of its keys are explained.
    pub expected_by: Vec<String>,
}

impl LineDiff {
    pub fn is_expected(&self) -> bool {
        !self.expected_by.is_empty()
    }
}

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&format!("{prefix}.{k}"), v, out)),
        Value::Array(items) if items.iter().any(|i| i.is_object()) => {
            items.iter().enumerate().for_each(|(i, v)| flatten(&format!("{prefix}.{i}"), v, out))
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

fn flat(line: Option<&Line>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    if let Some(l) = line {
        out.insert("op".to_string(), Value::String(l.op.clone()));
        flatten("result", &l.result, &mut out);
        out.insert("events".to_string(), serde_json::json!(l.events));
    }
    out
}

/// The keys where two JSON values differ, each side's value flattened as in a transcript diff
/// (`a.b`, `a.2.c`); used for results that are not transcripts (the publisher's).
pub fn json_diff(target: &Value, reference: &Value) -> Vec<KeyDiff> {
    let (mut ft, mut fr) = (BTreeMap::new(), BTreeMap::new());
    flatten("", target, &mut ft);
    flatten("", reference, &mut fr);
    let mut keys: Vec<&String> = ft.keys().chain(fr.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| ft.get(*k) != fr.get(*k))
        .map(|k| KeyDiff {
            key: k.trim_start_matches('.').to_string(),
            target: ft.get(k).cloned(),
            reference: fr.get(k).cloned(),
        })
        .collect()
}

/// Compares one scenario's target lines with its reference lines (`scenario` is `None` for
/// the proxy's replies, which belong to no scenario).
pub fn diff(scenario: Option<&str>, target: &[Line], reference: &[Line], flavors_differ: bool) -> Vec<LineDiff> {
    let mut out = Vec::new();
    for i in 0..target.len().max(reference.len()) {
        let (t, r) = (target.get(i), reference.get(i));
        let (ft, fr) = (flat(t), flat(r));
        let mut keys = Vec::new();
        for key in ft.keys().chain(fr.keys().filter(|k| !ft.contains_key(*k))) {
            let (a, b) = (ft.get(key), fr.get(key));
            if a != b {
                keys.push(KeyDiff { key: key.clone(), target: a.cloned(), reference: b.cloned() });
            }
        }
        if keys.is_empty() {
            continue;
        }
        let line = t.or(r).expect("one side has line i");
        let site = Site::of(scenario, &line.session, &line.op);
        let mut expected_by = Vec::new();
        let all_covered = flavors_differ
            && keys
                .iter()
                .all(|k| expected::explain(&site, &k.key).map(|d| expected_by.push(d.id.to_string())).is_some());
        expected_by.sort();
        expected_by.dedup();
        if !all_covered {
            expected_by.clear();
        }
        out.push(LineDiff { step: i, session: line.session.clone(), op: line.op.clone(), keys, expected_by });
    }
    out
}

/// The scenario's steps up to and including `upto`, one `session op` per line: enough to
/// replay the first difference by hand.
pub fn reproduction(lines: &[Line], upto: usize) -> Vec<String> {
    lines.iter().take(upto + 1).map(|l| format!("{} {}", l.session, l.op)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(result: Value) -> Line {
        Line { scenario: "x".into(), step: 0, session: "s0".into(), op: "get ~/a".into(), result, events: vec![] }
    }

    #[test]
    fn values_keep_their_json_type_and_absent_keys_are_left_out() {
        let d = diff(Some("x"), &[line(json!({"zxid": "z4", "n": 2}))], &[line(json!({"zxid": "z5"}))], false);
        let v = serde_json::to_value(&d[0].keys).unwrap();
        assert_eq!(
            v,
            json!([{"key": "result.n", "target": 2}, {"key": "result.zxid", "target": "z4", "reference": "z5"}])
        );
        assert_eq!(KeyDiff::show(&d[0].keys[1].target), "\"z4\"");
    }

    #[test]
    fn json_diff_names_every_differing_leaf() {
        let a = json!({"outcome": "completed", "permits": [{"epoch": 1}], "same": [1, 2]});
        let b = json!({"outcome": "refused", "permits": [{"epoch": 2}], "same": [1, 2]});
        let d = json_diff(&a, &b);
        let keys: Vec<&str> = d.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["outcome", "permits.0.epoch"]);
        assert_eq!(d[1].reference, Some(json!(2)));
        assert!(json_diff(&a, &a).is_empty());
    }
}
