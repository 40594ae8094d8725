//! From an applied outcome to the wire reply, and which watches a read leaves behind.

use testkeeper_wire::{MultiResult, OpCode, Request, Response, ZkError};

use crate::core::apply::{OpResult, Outcome};
use crate::core::watches::WatchKind;

/// (error code, body) of the reply to a write.
pub fn response(req: &Request, outcome: &Outcome) -> (i32, Response) {
    match outcome {
        Outcome::Failed(e) => (e.code(), Response::Empty),
        // A failed multi is not an error on the reply header: the per-op results carry it.
        Outcome::MultiFailed(codes) => (0, Response::Multi(codes.iter().map(|c| MultiResult::Error(*c)).collect())),
        Outcome::Ops(results) => match req {
            Request::Multi(ops) => {
                let subs = ops.iter().zip(results).map(|(op, r)| MultiResult::Ok(multi_header_op(op), body(op, r))).collect();
                (0, Response::Multi(subs))
            }
            single => (0, results.first().map_or(Response::Empty, |r| body(single, r))),
        },
        Outcome::SessionCreated(_) | Outcome::SessionClosed(_) => (0, Response::Empty),
    }
}

/// The op type a multi reply names for a successful sub-op (ZooKeeper's CreateResult is type
/// create2 when it carries a stat).
fn multi_header_op(req: &Request) -> OpCode {
    match req.op() {
        OpCode::CreateContainer | OpCode::CreateTtl => OpCode::Create2,
        other => other,
    }
}

fn body(req: &Request, result: &OpResult) -> Response {
    let create_with_stat = matches!(req.op(), OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl);
    match result {
        OpResult::Created { path, stat } if create_with_stat => Response::Create2 { path: path.clone(), stat: stat.clone() },
        OpResult::Created { path, .. } | OpResult::Nothing { path } if matches!(req, Request::Create(_)) => Response::Create(path.clone()),
        OpResult::Set(stat) => Response::Stat(stat.clone()),
        _ => Response::Empty,
    }
}

/// The watches a read registers, given its result: exists watches even a missing node (to see
/// its creation), getData and getChildren only an existing one.
pub fn watches_to_register<'a>(req: &'a Request, result: &Result<Response, ZkError>) -> Vec<(WatchKind, &'a str)> {
    let ok = result.is_ok();
    match req {
        Request::Exists(r) if r.watch && (ok || *result == Err(ZkError::NoNode)) => vec![(WatchKind::Data, &r.path)],
        Request::GetData(r) if r.watch && ok => vec![(WatchKind::Data, &r.path)],
        Request::GetChildren(r) | Request::GetChildren2(r) if r.watch && ok => vec![(WatchKind::Child, &r.path)],
        Request::FilteredList(r) | Request::FilteredListWithStatsAndData(r) if r.watch && ok => vec![(WatchKind::Child, &r.path)],
        _ => Vec::new(),
    }
}
