//! ids and counter, both sequential creates.
//! - ids: one sequential create, or a multi of several; the ids are the sequence numbers.
//! - counter: a multi of `n` sequential creates under the counter node and, last, a check of
//!   the counter node's version. A guarded add checks a version the node never has, so the
//!   whole multi must fail and add nothing (a server that keeps part of a failed multi is
//!   caught); a read counts the children after `sync`.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::data::CheckVersionRequest;
use testkeeper_wire::request::Request;
use testkeeper_wire::response::{MultiResult, Response};

use super::{create, created, seq_of, synced_children, Done, Step, WorkerState, ROOT};
use crate::client::{CallError, Conn};
use crate::config::Workload;
use crate::history::{Call, Ret};

/// The version a guarded add checks: the counter node's data is never set, so it stays 0.
const STALE_VERSION: i32 = 7;

pub fn next(w: Workload, rng: &mut ChaCha8Rng) -> Step {
    let call = if w == Workload::Ids {
        Call::NewIds { count: if rng.gen_bool(0.5) { 1 } else { rng.gen_range(2..=4) } }
    } else if rng.gen_bool(0.2) {
        Call::CounterRead
    } else {
        Call::CounterAdd { n: rng.gen_range(1..=3), guarded: rng.gen_bool(0.25) }
    };
    Step { call, key: None }
}

pub async fn exec(conn: &Conn, step: &Step, st: &mut WorkerState, zxids: &mut Vec<i64>) -> Done {
    match step.call {
        Call::NewIds { count } => {
            let prefix = format!("{ROOT}/ids/id-");
            let data = st.unique().to_string().into_bytes();
            let reqs = (0..count).map(|_| create(&prefix, &data, create_mode::PERSISTENT_SEQUENTIAL)).collect();
            match creates(conn, reqs, count == 1, zxids).await {
                Ok(paths) => {
                    let ids = paths.iter().filter_map(|p| seq_of(p)).collect();
                    Done::ok(Ret::Ids { ids }, paths.iter().map(|p| created(p, &data)).collect())
                }
                Err(e) => Done::failed(&e, true),
            }
        }
        Call::CounterAdd { n, guarded } => {
            let dir = format!("{ROOT}/counter");
            let data = st.unique().to_string().into_bytes();
            let mut reqs: Vec<Request> =
                (0..n).map(|_| create(&format!("{dir}/c-"), &data, create_mode::PERSISTENT_SEQUENTIAL)).collect();
            let version = if guarded { STALE_VERSION } else { 0 };
            reqs.push(Request::Check(CheckVersionRequest { path: dir, version }));
            match creates(conn, reqs, false, zxids).await {
                Ok(paths) => Done::ok(Ret::None, paths.iter().map(|p| created(p, &data)).collect()),
                Err(e) => Done::failed(&e, true),
            }
        }
        Call::CounterRead => match synced_children(conn, &format!("{ROOT}/counter"), zxids).await {
            Ok(c) => Done::ok(Ret::Count { count: c.len() as i64 }, Vec::new()),
            Err(e) => Done::failed(&e, false),
        },
        _ => unreachable!("ids and counter ops only"),
    }
}

/// Runs one create (`single`) or a multi; returns the paths created.
async fn creates(
    conn: &Conn,
    mut reqs: Vec<Request>,
    single: bool,
    zxids: &mut Vec<i64>,
) -> Result<Vec<String>, CallError> {
    if single {
        return match conn.call(reqs.remove(0), zxids).await? {
            Response::Create(p) => Ok(vec![p]),
            other => Err(CallError::Lost(format!("unexpected reply to create: {other:?}"))),
        };
    }
    let results = match conn.call(Request::Multi(reqs), zxids).await? {
        Response::Multi(r) => r,
        other => return Err(CallError::Lost(format!("unexpected reply to multi: {other:?}"))),
    };
    multi_paths(&results)
}

/// The paths a multi created, or the code of the op that failed it.
///
/// # Errors
/// The first non-zero code (a failed multi reports 0 before the failing op).
pub fn multi_paths(results: &[MultiResult]) -> Result<Vec<String>, CallError> {
    let mut paths = Vec::new();
    for r in results {
        match r {
            MultiResult::Ok(_, Response::Create(p)) => paths.push(p.clone()),
            MultiResult::Ok(..) => {}
            MultiResult::Error(0) | MultiResult::OpError(_, 0) => {}
            MultiResult::Error(c) | MultiResult::OpError(_, c) => return Err(CallError::Server(*c)),
        }
    }
    Ok(paths)
}
