//! lock: ZooKeeper's lock recipe. A client creates an ephemeral-sequential node under the
//! lock, waits until its node is the lowest (then it holds the lock, and the node's sequence
//! number is its fencing token), makes a few fenced writes to the resource (a multi that
//! checks its lock node still exists and sets the resource), and deletes its node. A session
//! that expires loses its node, and with it the lock: its next fenced write must fail.

use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::data::{CheckVersionRequest, DeleteRequest, SetDataRequest};
use testkeeper_wire::request::Request;
use testkeeper_wire::response::Response;

use super::ids::multi_paths;
use super::{children, create, created, seq_of, Done, Step, WorkerState, ROOT};
use crate::client::{CallError, Conn};
use crate::history::{Call, Effect, Ret};

/// The resource the holder writes.
pub const RESOURCE: &str = "/chaos/lock-resource";

/// How long an acquire waits for its turn before it gives up.
const WAIT: Duration = Duration::from_millis(2500);

pub fn next(rng: &mut ChaCha8Rng, st: &mut WorkerState) -> Step {
    let value = st.unique();
    let call = match st.lock {
        None => Call::Acquire,
        Some((_, token, 0)) => Call::Release { token },
        Some((_, token, _)) => Call::Fenced { token, value },
    };
    // Keep the generator's sequence independent of who holds the lock.
    let _ = rng.gen::<u32>();
    Step { call, key: Some("lock".into()) }
}

pub async fn exec(conn: &Conn, step: &Step, st: &mut WorkerState, zxids: &mut Vec<i64>) -> Done {
    let dir = format!("{ROOT}/lock");
    match step.call {
        Call::Acquire => {
            let p =
                match conn.call(create(&format!("{dir}/lock-"), b"", create_mode::EPHEMERAL_SEQUENTIAL), zxids).await {
                    Ok(Response::Create(p)) => p,
                    Ok(other) => return Done::failed(&CallError::Lost(format!("unexpected reply {other:?}")), true),
                    Err(e) => return Done::failed(&e, true),
                };
            let token = seq_of(&p).unwrap_or(-1);
            let until = Instant::now() + WAIT;
            loop {
                let names = match children(conn, &dir, zxids).await {
                    Ok(n) => n,
                    // Our node is there but we cannot tell whether we hold the lock.
                    Err(e) => return Done { end_session: true, ..Done::failed(&e, true) },
                };
                let lowest = names.iter().filter_map(|n| seq_of(n)).min();
                if lowest == Some(token) {
                    st.lock = Some((p.clone(), token, 2));
                    return Done::ok(Ret::Token { token }, vec![created(&p, b"")]);
                }
                if !names.iter().any(|n| seq_of(n) == Some(token)) {
                    // Our node is gone: the session expired under us.
                    return Done { end_session: true, ..Done::failed(&CallError::Server(-112), true) };
                }
                if Instant::now() > until {
                    let del = Request::Delete(DeleteRequest { path: p, version: -1 });
                    return match conn.call(del, zxids).await {
                        Ok(_) => Done::failed(&CallError::Lost("gave up waiting for the lock".into()), false),
                        Err(e) => Done { end_session: true, ..Done::failed(&e, true) },
                    };
                }
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
        }
        Call::Fenced { token, value } => {
            let Some((p, _, left)) = st.lock.clone() else { unreachable!("fenced writes only while holding") };
            let data = format!("{token}:{value}").into_bytes();
            let multi = Request::Multi(vec![
                Request::Check(CheckVersionRequest { path: p.clone(), version: -1 }),
                Request::SetData(SetDataRequest { path: RESOURCE.into(), data: Some(data.clone()), version: -1 }),
            ]);
            let r = match conn.call(multi, zxids).await {
                Ok(Response::Multi(r)) => multi_paths(&r).map(drop),
                Ok(other) => Err(CallError::Lost(format!("unexpected reply {other:?}"))),
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => {
                    st.lock = Some((p, token, left - 1));
                    Done::ok(Ret::None, vec![Effect { kind: "set".into(), path: RESOURCE.into(), data: Some(data) }])
                }
                Err(e) => {
                    // Whatever happened, this session no longer knows it holds the lock.
                    st.lock = None;
                    Done { end_session: true, ..Done::failed(&e, true) }
                }
            }
        }
        Call::Release { .. } => {
            let Some((p, _, _)) = st.lock.take() else { unreachable!("release only while holding") };
            match conn.call(Request::Delete(DeleteRequest { path: p.clone(), version: -1 }), zxids).await {
                Ok(_) => Done::ok(Ret::None, vec![Effect { kind: "delete".into(), path: p, data: None }]),
                Err(e) => Done { end_session: true, ..Done::failed(&e, true) },
            }
        }
        _ => unreachable!("lock ops only"),
    }
}
