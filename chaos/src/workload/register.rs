//! register: read (`sync` then `getData`), write (`setData` at any version) and
//! compare-and-set (`setData` at the version this client last saw) on a few keys, each a
//! znode created with data `0` at version 0. Checked for linearizability key by key.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use testkeeper_wire::records::data::{GetDataRequest, PathRecord, SetDataRequest};
use testkeeper_wire::request::Request;
use testkeeper_wire::response::Response;

use super::{Done, Step, WorkerState, ROOT};
use crate::client::{CallError, Conn};
use crate::history::{Call, Effect, Ret};

/// The znode of register `key`.
pub fn path(key: &str) -> String {
    format!("{ROOT}/register/{key}")
}

pub fn next(keys: usize, rng: &mut ChaCha8Rng, st: &mut WorkerState) -> Step {
    let key = format!("k{}", rng.gen_range(0..keys.max(1)));
    let value = st.unique();
    let call = match rng.gen_range(0..10) {
        0..=3 => Call::Read,
        4..=6 => Call::Write { value },
        _ => {
            let (expect, version) = st.seen.get(&key).copied().unwrap_or((0, 0));
            Call::Cas { version, expect, value }
        }
    };
    Step { call, key: Some(key) }
}

pub async fn exec(conn: &Conn, step: &Step, st: &mut WorkerState, zxids: &mut Vec<i64>) -> Done {
    let key = step.key.clone().unwrap_or_default();
    let p = path(&key);
    match step.call {
        Call::Read => {
            if let Err(e) = conn.call(Request::Sync(PathRecord { path: p.clone() }), zxids).await {
                return Done::failed(&e, false);
            }
            match conn.call(Request::GetData(GetDataRequest { path: p, watch: false }), zxids).await {
                Ok(Response::Data { data, stat }) => {
                    let text = String::from_utf8_lossy(data.as_deref().unwrap_or_default()).to_string();
                    let Ok(value) = text.parse::<i64>() else {
                        let e = CallError::Lost(format!("register {key} holds '{text}', not a number"));
                        return Done::failed(&e, false);
                    };
                    st.seen.insert(key, (value, stat.version));
                    Done::ok(Ret::Value { value, version: stat.version, mzxid: stat.mzxid }, Vec::new())
                }
                Ok(other) => Done::failed(&CallError::Lost(format!("unexpected reply {other:?}")), false),
                Err(e) => Done::failed(&e, false),
            }
        }
        Call::Write { value } | Call::Cas { value, .. } => {
            let version = if let Call::Cas { version, .. } = step.call { version } else { -1 };
            let data = value.to_string().into_bytes();
            let req = Request::SetData(SetDataRequest { path: p.clone(), data: Some(data.clone()), version });
            match conn.call(req, zxids).await {
                Ok(Response::Stat(stat)) => {
                    st.seen.insert(key, (value, stat.version));
                    let effect = Effect { kind: "set".into(), path: p, data: Some(data) };
                    Done::ok(Ret::Version { version: stat.version }, vec![effect])
                }
                Ok(other) => Done::failed(&CallError::Lost(format!("unexpected reply {other:?}")), true),
                Err(e) => Done::failed(&e, true),
            }
        }
        _ => unreachable!("register ops only"),
    }
}
