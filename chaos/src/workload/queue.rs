//! queue (Jepsen's total queue): enqueue creates a sequential child whose name carries the
//! value (`item-<value>-<seq>`), dequeue lists the children and deletes the first one in a
//! multi (the next one when another client took it first), and the final phase drains what
//! is left after `sync`.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::data::DeleteRequest;
use testkeeper_wire::request::Request;
use testkeeper_wire::response::Response;

use super::ids::multi_paths;
use super::{children, create, created, seq_of, synced_children, Done, Step, WorkerState, ROOT};
use crate::client::{CallError, Conn};
use crate::history::{Call, Effect, Outcome, Ret};

/// Children a dequeue tries before it reports the queue contended (a fail).
const TRIES: usize = 4;

pub fn next(rng: &mut ChaCha8Rng, st: &mut WorkerState) -> Step {
    let call = if rng.gen_bool(0.55) { Call::Enqueue { value: st.unique() } } else { Call::Dequeue };
    Step { call, key: None }
}

fn value_of(name: &str) -> Option<i64> {
    name.strip_prefix("item-")?.split('-').next()?.parse().ok()
}

/// The queue's items, oldest first.
fn ordered(mut names: Vec<String>) -> Vec<String> {
    names.sort_by_key(|n| seq_of(n).unwrap_or(i64::MAX));
    names
}

pub async fn exec(conn: &Conn, step: &Step, zxids: &mut Vec<i64>) -> Done {
    let dir = format!("{ROOT}/queue");
    match step.call {
        Call::Enqueue { value } => {
            let prefix = format!("{dir}/item-{value}-");
            match conn.call(create(&prefix, b"", create_mode::PERSISTENT_SEQUENTIAL), zxids).await {
                Ok(Response::Create(p)) => Done::ok(Ret::None, vec![created(&p, b"")]),
                Ok(other) => Done::failed(&CallError::Lost(format!("unexpected reply {other:?}")), true),
                Err(e) => Done::failed(&e, true),
            }
        }
        Call::Dequeue => {
            let names = match children(conn, &dir, zxids).await {
                Ok(n) => ordered(n),
                Err(e) => return Done::failed(&e, false),
            };
            if names.is_empty() {
                return Done::ok(Ret::Dequeued { value: None }, Vec::new());
            }
            for name in names.iter().take(TRIES) {
                let p = format!("{dir}/{name}");
                let value = value_of(name);
                let del = Request::Delete(DeleteRequest { path: p.clone(), version: -1 });
                let r = match conn.call(Request::Multi(vec![del]), zxids).await {
                    Ok(Response::Multi(r)) => multi_paths(&r).map(drop),
                    Ok(other) => Err(CallError::Lost(format!("unexpected reply {other:?}"))),
                    Err(e) => Err(e),
                };
                match r {
                    Ok(()) => {
                        let effect = Effect { kind: "delete".into(), path: p, data: None };
                        return Done::ok(Ret::Dequeued { value }, vec![effect]);
                    }
                    Err(CallError::Server(-101)) => continue,
                    Err(e) => {
                        let mut d = Done::failed(&e, true);
                        if d.outcome == Outcome::Unknown {
                            d.ret = Ret::Dequeued { value };
                        }
                        return d;
                    }
                }
            }
            Done::failed(&CallError::Server(-101), true)
        }
        Call::Drain => match synced_children(conn, &dir, zxids).await {
            Ok(n) => {
                Done::ok(Ret::Elements { elements: ordered(n).iter().filter_map(|n| value_of(n)).collect() }, vec![])
            }
            Err(e) => Done::failed(&e, false),
        },
        _ => unreachable!("queue ops only"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_order_come_from_the_names() {
        assert_eq!(value_of("item-1000000003-0000000012"), Some(1_000_000_003));
        let got = ordered(vec!["item-5-0000000003".into(), "item-9-0000000001".into()]);
        assert_eq!(got[0], "item-9-0000000001");
    }
}
