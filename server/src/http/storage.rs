//! Keeper's storage API, `/api/v1/storage/{exists,list,get,set,create,remove}/<path>`, as
//! ClickHouse's `KeeperHTTPStorageHandler.cpp` serves it (the operation-in-the-path layout):
//!
//! | operation | answer |
//! |---|---|
//! | `exists` | `200 application/json {"stat":{...}}` |
//! | `list` | `200 application/json {"child_node_names":[...],"stat":{...}}` |
//! | `get` | `200 application/octet-stream`, the raw data |
//! | `set?version=V`, body = data | `200 text/plain "OK\n"` |
//! | `create`, body = data (a persistent node) | `200 text/plain "OK\n"` |
//! | `remove?version=V` | `200 text/plain "OK\n"` |
//!
//! Errors, each with Keeper's text: NONODE 404 `Requested node not found.`, BADVERSION 409
//! `Version conflict. ...`, a missing or unparsable `version` 400, an unknown operation or no
//! operation 400, any other error code 500 `Keeper request finished with error: <message>.`,
//! and 503 `Service Unavailable.` while a cluster node has no leader. Keeper takes GET, HEAD
//! and POST for every operation; so does this route, and any other method gets 405.
//!
//! Like Keeper (which runs each request in a session of its own through its dispatcher), each
//! request opens a session on this server's own client port and closes it after: the request
//! goes through the log, the faults and (in a cluster) the leader exactly as a client's would.
//! A state-changing operation sent with GET is checked by the cross-site guard as a write, so
//! a foreign page's `<img src=".../create/x">` cannot create a node.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::{Acl, Stat};

use crate::engine::Shared;
use crate::fourlw;

/// The route prefix; the operation is the next segment.
pub const PREFIX: &str = "/api/v1/storage";

/// The storage operations, by their path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Exists,
    List,
    Get,
    Set,
    Create,
    Remove,
}

impl Op {
    fn parse(word: &str) -> Option<Op> {
        Some(match word {
            "exists" => Op::Exists,
            "list" => Op::List,
            "get" => Op::Get,
            "set" => Op::Set,
            "create" => Op::Create,
            "remove" => Op::Remove,
            _ => return None,
        })
    }

    fn writes(self) -> bool {
        matches!(self, Op::Set | Op::Create | Op::Remove)
    }
}

/// What a request path asks for: the operation and the znode path, or Keeper's 400 text.
pub fn parse_target(uri_path: &str) -> Result<(Op, String), &'static str> {
    // Poco's getPathSegments: empty segments dropped, each percent-decoded.
    let segments: Vec<String> = uri_path.split('/').filter(|s| !s.is_empty()).map(percent_decode).collect();
    if segments.len() <= 3 {
        return Err("Invalid storage request path.\n");
    }
    let op = Op::parse(&segments[3]).ok_or("Storage operation is not supported.\n")?;
    let rest = &segments[4..];
    let path = if rest.is_empty() { "/".to_string() } else { rest.iter().map(|s| format!("/{s}")).collect() };
    Ok((op, path))
}

/// `%XX` decoded (an invalid escape stays as written); `+` stays `+` in a path.
fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `version` query parameter as Keeper reads it: present and a whole `i32`.
pub fn version_param(query: Option<&str>) -> Option<i32> {
    let query = query?;
    query.split('&').filter_map(|kv| kv.split_once('=').or(Some((kv, "")))).find_map(|(k, v)| {
        (percent_decode(k) == "version").then(|| percent_decode(&v.replace('+', " ")).parse::<i32>().ok())?
    })
}

/// A Stat as Keeper's storage API writes it (its field names; keys sorted, as Poco's JSON
/// object prints them).
pub fn stat_json(s: &Stat) -> Value {
    json!({
        "czxid": s.czxid,
        "mzxid": s.mzxid,
        "pzxid": s.pzxid,
        "ctime": s.ctime,
        "mtime": s.mtime,
        "version": s.version,
        "cversion": s.cversion,
        "aversion": s.aversion,
        "ephemeralOwner": s.ephemeral_owner,
        "dataLength": s.data_length,
        "numChildren": s.num_children,
    })
}

/// ClickHouse's `Coordination::errorMessage` for a code.
fn error_message(code: i32) -> String {
    match code {
        -1 => "System error",
        -2 => "Run time inconsistency",
        -3 => "Data inconsistency",
        -4 => "Connection loss",
        -5 => "Marshalling error",
        -6 => "Unimplemented",
        -7 => "Operation timeout",
        -8 => "Bad arguments",
        -9 => "Invalid zhandle state",
        -100 => "API error",
        -101 => "No node",
        -102 => "Not authenticated",
        -103 => "Bad version",
        -108 => "No children for ephemerals",
        -110 => "Node exists",
        -111 => "Not empty",
        -112 => "Session expired",
        -113 => "Invalid callback",
        -114 => "Invalid ACL",
        -115 => "Authentication failed",
        -116 => "ZooKeeper is closing",
        -118 => "Session moved to another server, so operation is ignored",
        -119 => "State-changing request is passed to read-only server",
        other => return format!("Unknown error {other}"),
    }
    .to_string()
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body.into()).into_response()
}

/// A failed request as Keeper answers it.
fn failure(e: &ClientError) -> Response {
    match e.code() {
        Some(-101) => text(StatusCode::NOT_FOUND, "Requested node not found.\n"),
        Some(-103) => text(StatusCode::CONFLICT, "Version conflict. Check the current version and try again.\n"),
        Some(code) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Keeper request finished with error: {}.\n", error_message(code)),
        ),
        None => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

fn ok_text() -> Response {
    text(StatusCode::OK, "OK\n")
}

/// Where this server's own clients connect: its client address, a wildcard bind read as
/// loopback.
pub fn self_addr(shared: &Shared) -> SocketAddr {
    let mut a = shared.cfg.listen;
    if a.ip().is_unspecified() {
        a.set_ip(match a.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    a
}

/// `GET|HEAD|POST /api/v1/storage/...`.
pub async fn storage(State(shared): State<Arc<Shared>>, RawQuery(query): RawQuery, req: Request) -> Response {
    if !matches!(*req.method(), Method::GET | Method::HEAD | Method::POST) {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not allowed here: use GET, HEAD or POST\n", req.method()),
        );
    }
    let (op, path) = match parse_target(req.uri().path()) {
        Ok(t) => t,
        Err(why) => return text(StatusCode::BAD_REQUEST, why),
    };
    if op.writes() {
        if let Some(why) = super::guard::write_refusal(req.method(), req.headers()) {
            return text(StatusCode::FORBIDDEN, format!("{why}\n"));
        }
    }
    let (_, _, ready) = fourlw::readiness(&shared.engine());
    if !ready {
        return text(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable.\n");
    }
    let body = match axum::body::to_bytes(req.into_body(), shared.cfg.max_frame).await {
        Ok(b) => b,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("cannot read the request body: {e}\n")),
    };
    let addr = self_addr(&shared);
    let run = async move {
        let client = match Client::connect(addr, ConnectOptions::default()).await {
            Ok(c) => c,
            Err(e) => {
                return text(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot open a session on this server: {e}\n"))
            }
        };
        let answer = perform(&client, op, &path, query.as_deref(), body).await;
        // Best effort: a fault rule may hold the close too.
        let _ = tokio::time::timeout(CLOSE_WAIT, client.close()).await;
        answer
    };
    match tokio::time::timeout(OPERATION_TIMEOUT, run).await {
        Ok(answer) => answer,
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Operation timeout ({} ms) exceeded.\n", OPERATION_TIMEOUT.as_millis()),
        ),
    }
}

/// Keeper's `http_control.storage.operation_timeout` default
/// (`Coordination::DEFAULT_OPERATION_TIMEOUT_MS`): a request held by a fault rule (a blackhole,
/// a long delay) is answered with 500 after this long instead of hanging.
pub const OPERATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long the closing session may take before the answer is sent anyway.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

async fn perform(c: &Client, op: Op, path: &str, query: Option<&str>, body: Bytes) -> Response {
    let json_answer =
        |v: Value| (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response();
    match op {
        Op::Exists => match c.exists(path, false).await {
            Ok(Some(stat)) => json_answer(json!({ "stat": stat_json(&stat) })),
            Ok(None) => text(StatusCode::NOT_FOUND, "Requested node not found.\n"),
            Err(e) => failure(&e),
        },
        Op::List => match c.get_children2(path, false).await {
            Ok((names, stat)) => json_answer(json!({ "child_node_names": names, "stat": stat_json(&stat) })),
            Err(e) => failure(&e),
        },
        Op::Get => match c.get_data(path, false).await {
            Ok((data, _)) => {
                (StatusCode::OK, [(header::CONTENT_TYPE, "application/octet-stream")], data).into_response()
            }
            Err(e) => failure(&e),
        },
        Op::Set => {
            let Some(version) = version_param(query) else {
                return text(StatusCode::BAD_REQUEST, "Version parameter is not set or invalid for set request.\n");
            };
            match c.set_data(path, &body, version).await {
                Ok(_) => ok_text(),
                Err(e) => failure(&e),
            }
        }
        Op::Create => match c.create(path, &body, &Acl::open(), create_mode::PERSISTENT).await {
            Ok(_) => ok_text(),
            Err(e) => failure(&e),
        },
        Op::Remove => {
            let Some(version) = version_param(query) else {
                return text(StatusCode::BAD_REQUEST, "Version parameter is not set or invalid for remove request.\n");
            };
            match c.delete(path, version).await {
                Ok(()) => ok_text(),
                Err(e) => failure(&e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_as_poco_splits_them() {
        assert_eq!(parse_target("/api/v1/storage/get/a/b"), Ok((Op::Get, "/a/b".into())));
        assert_eq!(parse_target("/api/v1/storage/list"), Ok((Op::List, "/".into())));
        assert_eq!(parse_target("/api/v1/storage/list/"), Ok((Op::List, "/".into())));
        assert_eq!(parse_target("/api/v1/storage/exists//a//b/"), Ok((Op::Exists, "/a/b".into())));
        assert_eq!(parse_target("/api/v1/storage/get/a%20b/%2Fc"), Ok((Op::Get, "/a b//c".into())));
        assert_eq!(parse_target("/api/v1/storage"), Err("Invalid storage request path.\n"));
        assert_eq!(parse_target("/api/v1/storage/"), Err("Invalid storage request path.\n"));
        assert_eq!(parse_target("/api/v1/storage/move/a"), Err("Storage operation is not supported.\n"));
    }

    #[test]
    fn versions_must_be_whole_i32s() {
        assert_eq!(version_param(Some("version=3")), Some(3));
        assert_eq!(version_param(Some("x=1&version=-1")), Some(-1));
        assert_eq!(version_param(None), None);
        assert_eq!(version_param(Some("")), None);
        assert_eq!(version_param(Some("version=")), None);
        assert_eq!(version_param(Some("version=abc")), None);
        assert_eq!(version_param(Some("version=99999999999")), None);
        assert_eq!(version_param(Some("ver=1")), None);
    }

    #[test]
    fn percent_escapes() {
        assert_eq!(percent_decode("a%2fb%zz%4"), "a/b%zz%4");
        assert_eq!(percent_decode("%"), "%");
    }

    #[test]
    fn stat_fields_are_keepers() {
        let v = stat_json(&Stat { version: 2, ephemeral_owner: 5, ..Stat::default() });
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "aversion",
                "ctime",
                "cversion",
                "czxid",
                "dataLength",
                "ephemeralOwner",
                "mtime",
                "mzxid",
                "numChildren",
                "pzxid",
                "version"
            ]
        );
        assert_eq!((v["version"].as_i64(), v["ephemeralOwner"].as_i64()), (Some(2), Some(5)));
    }
}
