//! `/ready`, `/api/v1/commands/{word}` and `/api/v1/commands?command=`, as ClickHouse Keeper's
//! `http_control` serves them, so health checks and tooling written for Keeper work unchanged.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::engine::Shared;
use crate::{fourlw, keeper_client};

/// `GET /ready`, Keeper's readiness answer: ok (200) for a leader, a follower that knows its
/// leader, or a standalone server (its own leader); fail (503) otherwise
/// (`KeeperReadinessHandler.cpp`).
pub async fn ready(State(shared): State<Arc<Shared>>) -> Response {
    let (role, has_leader, ok) = fourlw::readiness(&shared.engine());
    let body = json!({"details": {"role": role, "hasLeader": has_leader}, "status": if ok { "ok" } else { "fail" }});
    let code = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(body)).into_response()
}

/// `GET /api/v1/commands/{word}`: the four-letter word's answer as Keeper's
/// `KeeperHTTPCommandsHandler` gives it, `200 {"result": TEXT}` with the same text the TCP port
/// gives; `400 {"message":"Invalid four letter command."}` for a word the flavor does not know,
/// `403 {"message":"Command is disabled. Check server settings."}` for one the allow list
/// leaves out. `?format=text` answers the bare text instead (404 and 403 with a sentence), as
/// this route did before it followed Keeper.
pub async fn command(
    State(shared): State<Arc<Shared>>,
    Path(word): Path<String>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let text = q.get("format").is_some_and(|f| f == "text");
    if !fourlw::is_known(shared.cfg.flavor, &word) {
        if text {
            return (StatusCode::NOT_FOUND, format!("unknown command '{word}'\n")).into_response();
        }
        return (StatusCode::BAD_REQUEST, Json(json!({"message": "Invalid four letter command."}))).into_response();
    }
    match fourlw::answer(&shared, &word, None) {
        Some(answer) if text => match testkeeper_wire::rawstr::raw_bytes(&answer) {
            // A path that is not UTF-8 goes out as its bytes, as on the client port.
            std::borrow::Cow::Owned(raw) => ([(axum::http::header::CONTENT_TYPE, "text/plain")], raw).into_response(),
            std::borrow::Cow::Borrowed(_) => answer.into_response(),
        },
        Some(answer) => Json(json!({"result": answer})).into_response(),
        None if text => {
            (StatusCode::FORBIDDEN, format!("command '{word}' is not in the four-letter-word allow list\n"))
                .into_response()
        }
        None => (StatusCode::FORBIDDEN, Json(json!({"message": "Command is disabled. Check server settings."})))
            .into_response(),
    }
}

/// `GET|HEAD|POST /api/v1/commands?command=LINE[&cwd=PATH]`: one line of keeper-client's
/// language (`ls`, `get`, `create`, a four-letter word, ... several separated by `;`), run by
/// the same interpreter as `testkeeper client` in a session of its own on this server, from
/// the working path `cwd` (default `/`). `200 {"result": OUTPUT}`; a line that does not parse,
/// or whose statement fails, `400 {"message": ERROR, "result": OUTPUT_BEFORE_IT}`; a line that
/// writes, sent by a page of another site, 403 (the cross-site guard). A missing `command` is
/// 400.
pub async fn run_line(
    State(shared): State<Arc<Shared>>,
    method: Method,
    headers: HeaderMap,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let bad = |m: String| (StatusCode::BAD_REQUEST, Json(json!({"message": m}))).into_response();
    let Some(line) = q.get("command").filter(|c| !c.trim().is_empty()) else {
        return bad("missing ?command=: a keeper-client command such as `ls /` or a four-letter word".into());
    };
    let cmds = match keeper_client::parse::parse(line) {
        Ok(c) => c,
        Err(e) => return bad(e.to_string()),
    };
    if cmds.iter().any(keeper_client::parse::Command::writes) {
        if let Some(why) = super::guard::write_refusal(&method, &headers) {
            return (StatusCode::FORBIDDEN, Json(json!({"message": why}))).into_response();
        }
    }
    let cwd = keeper_client::path::absolute("/", q.get("cwd").map_or("/", String::as_str));
    let addr = super::storage::self_addr(&shared);
    let timeout = keeper_client::DEFAULT_TIMEOUT;
    let run = async {
        let mut s = match keeper_client::Session::connect(addr, timeout, timeout, timeout).await {
            Ok(s) => s,
            Err(e) => return Err(format!("cannot open a session on this server: {e}")),
        };
        s.cwd = cwd;
        let o = s.run(line).await;
        s.close().await;
        Ok(o)
    };
    match tokio::time::timeout(super::storage::OPERATION_TIMEOUT, run).await {
        Ok(Ok(o)) => match o.err {
            None => Json(json!({"result": o.out})).into_response(),
            Some(e) => (StatusCode::BAD_REQUEST, Json(json!({"message": e.to_string(), "result": o.out}))).into_response(),
        },
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"message": e}))).into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"message": format!("Operation timeout ({} ms) exceeded.", super::storage::OPERATION_TIMEOUT.as_millis())})),
        )
            .into_response(),
    }
}
