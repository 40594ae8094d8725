//! A reply, a watch event or an error code as the JSON a transcript holds, the same for the
//! conformance runner, the proxy's cross-check and replay: only what a client can rely on
//! (times become the facts `ctime==mtime` / `mtime>=ctime`, children are sorted, session ids
//! are named by the caller's `owner` map).

use serde_json::{json, Map, Value};
use testkeeper_wire::{MultiResult, Response, Stat};

/// `NONODE`-style name of a result code.
pub fn code_name(code: i32) -> String {
    if code == 0 {
        return "OK".to_string();
    }
    match testkeeper_wire::ZkError::from_code(code) {
        Some(e) => e.name().to_string(),
        None => format!("code{code}"),
    }
}

/// A watch event's type by name.
pub fn event_type(t: i32) -> String {
    match t {
        -1 => "None".into(),
        1 => "NodeCreated".into(),
        2 => "NodeDeleted".into(),
        3 => "NodeDataChanged".into(),
        4 => "NodeChildrenChanged".into(),
        5 => "DataWatchRemoved".into(),
        6 => "ChildWatchRemoved".into(),
        7 => "PersistentWatchRemoved".into(),
        other => format!("type{other}"),
    }
}

/// The stat with times as facts; `owner` names an ephemeral owner's session id.
pub fn stat_json(s: &Stat, owner: &dyn Fn(i64) -> Value) -> Value {
    json!({
        "czxid": s.czxid, "mzxid": s.mzxid, "pzxid": s.pzxid,
        // Millisecond times are compared only where the outcome cannot depend on timing: an
        // unmodified node has ctime == mtime, a modified one mtime >= ctime.
        "times": match (s.czxid == s.mzxid, s.ctime == s.mtime, s.mtime >= s.ctime) {
            (true, true, _) => "ctime==mtime",
            (false, _, true) => "mtime>=ctime",
            _ => "inconsistent",
        },
        "version": s.version, "cversion": s.cversion, "aversion": s.aversion,
        "ephemeralOwner": match s.ephemeral_owner {
            0 => json!("0"),
            // ZooKeeper's CONTAINER_EPHEMERAL_OWNER, which Keeper shows for containers.
            i64::MIN => json!("container-marker"),
            id => owner(id),
        },
        "dataLength": s.data_length, "numChildren": s.num_children,
    })
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// A successful reply's body.
pub fn response_json(r: &Response, owner: &dyn Fn(i64) -> Value) -> Value {
    let stat = |s: &Stat| stat_json(s, owner);
    match r {
        Response::Empty => json!({"ok": true}),
        Response::Create(path) => json!({ "path": path }),
        Response::Create2 { path, stat: s } => json!({ "path": path, "stat": stat(s) }),
        Response::Stat(s) => json!({ "stat": stat(s) }),
        Response::Data { data, stat: s } => {
            json!({ "data": data.as_deref().map(String::from_utf8_lossy), "stat": stat(s) })
        }
        Response::Acl { acl, stat: s } => {
            let acl: Vec<String> = acl.iter().map(|a| format!("{} {}:{}", a.perms, a.id.scheme, a.id.id)).collect();
            json!({ "acl": acl, "stat": stat(s) })
        }
        Response::Children(c) => json!({ "children": sorted(c) }),
        Response::Children2 { children, stat: s } => json!({ "children": sorted(children), "stat": stat(s) }),
        Response::Path(p) => json!({ "path": p }),
        Response::Paths(p) => json!({ "paths": sorted(p) }),
        Response::Number(n) => json!({ "number": n }),
        Response::WhoAmI(ids) => {
            // The `ip` identity is the client's address, which depends on where it runs.
            let user = |c: &testkeeper_wire::records::session::ClientInfo| {
                if c.auth_scheme == "ip" {
                    "(client address)".to_string()
                } else {
                    c.user.clone()
                }
            };
            let mut ids: Vec<String> = ids.iter().map(|c| format!("{}:{}", c.auth_scheme, user(c))).collect();
            ids.sort();
            json!({ "client_info": ids })
        }
        Response::ListWithStatsAndData(l) => json!({
            "names": sorted(&l.names),
            "stat": stat(&l.stat),
            "children": l.stats.len(),
        }),
        Response::Multi(results) => {
            let items: Vec<Value> = results
                .iter()
                .map(|m| match m {
                    MultiResult::Ok(op, body) => {
                        let mut v = response_json(body, owner);
                        v["op"] = json!(op.name());
                        v
                    }
                    MultiResult::Error(code) => json!({ "err": code_name(*code) }),
                    // Keeper's multiRead form keeps the op type: the extra key is the difference.
                    MultiResult::OpError(op, code) => json!({ "err": code_name(*code), "op": op.name() }),
                })
                .collect();
            json!({ "results": items })
        }
    }
}

/// The paths a successful reply says were created (create replies, also inside a multi).
pub fn created_paths(r: &Response) -> Vec<String> {
    match r {
        Response::Create(p) | Response::Create2 { path: p, .. } => vec![p.clone()],
        Response::Multi(results) => results
            .iter()
            .filter_map(|m| match m {
                MultiResult::Ok(_, body) => Some(created_paths(body)),
                _ => None,
            })
            .flatten()
            .collect(),
        _ => Vec::new(),
    }
}

/// An object with one key, for results that are not replies (`{"client_error": ...}`).
pub fn one(key: &str, v: Value) -> Value {
    let mut m = Map::new();
    m.insert(key.into(), v);
    Value::Object(m)
}
