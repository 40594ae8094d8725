//! set: each client adds children with unique names (`e<N>`), and now and then reads them
//! all (`sync` then `getChildren`); the final phase reads once on every server.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{create, created, synced_children, Done, Step, WorkerState, ROOT};
use crate::client::Conn;
use crate::history::{Call, Ret};

pub fn next(rng: &mut ChaCha8Rng, st: &mut WorkerState) -> Step {
    let call = if rng.gen_bool(0.85) { Call::Add { element: st.unique() } } else { Call::ReadSet };
    Step { call, key: None }
}

pub async fn exec(conn: &Conn, step: &Step, _st: &mut WorkerState, zxids: &mut Vec<i64>) -> Done {
    let dir = format!("{ROOT}/set");
    match step.call {
        Call::Add { element } => {
            let p = format!("{dir}/e{element}");
            match conn.call(create(&p, b"", 0), zxids).await {
                Ok(_) => Done::ok(Ret::None, vec![created(&p, b"")]),
                Err(e) => Done::failed(&e, true),
            }
        }
        Call::ReadSet => match synced_children(conn, &dir, zxids).await {
            Ok(names) => {
                let elements = names.iter().filter_map(|n| n.strip_prefix('e')?.parse().ok()).collect();
                Done::ok(Ret::Elements { elements }, Vec::new())
            }
            Err(e) => Done::failed(&e, false),
        },
        _ => unreachable!("set ops only"),
    }
}
