//! From an applied outcome to the wire reply, and which watches a read leaves behind.

use testkeeper_wire::opcode::Reply;
use testkeeper_wire::{MultiResult, OpCode, Request, Response, ZkError};

use crate::core::apply::{OpResult, Outcome};
use crate::core::flavor::Rules;
use crate::core::watches::WatchKind;

/// What a write's reply needs of its request, kept while the write is in flight (the
/// request itself goes to the proposer, and in a cluster over the network to the leader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub op: OpCode,
    /// A multi's sub-op codes.
    pub subs: Vec<OpCode>,
    /// A sync's path (its reply echoes it), and any request's for the debug log line.
    pub path: Option<String>,
}

impl Shape {
    /// The reply shape of `req`.
    pub fn of(req: &Request) -> Shape {
        let subs = match req {
            Request::Multi(ops) => ops.iter().map(Request::op).collect(),
            _ => Vec::new(),
        };
        let path = match req {
            Request::Sync(p) => Some(p.path.clone()),
            // Kept only when the debug log line will show it.
            _ if tracing::enabled!(tracing::Level::DEBUG) => req.path().map(str::to_string),
            _ => None,
        };
        Shape { op: req.op(), subs, path }
    }
}

/// (error code, body) of the reply to a write, under the flavor's `rules`.
pub fn response(req: &Shape, outcome: &Outcome, rules: &Rules) -> (i32, Response) {
    match outcome {
        Outcome::Failed(e) => (e.code(), Response::Empty),
        // A failed multi is not an error on the reply header: the per-op results carry it.
        Outcome::MultiFailed(codes) => (0, Response::Multi(codes.iter().map(|c| MultiResult::Error(*c)).collect())),
        // Only a deliberately broken proposer (`partial-multi`) applies part of a multi: its
        // client is told the multi failed, as the broken promise requires.
        Outcome::Ops(results) if req.op == OpCode::Multi && results.len() < req.subs.len() => {
            let failed = (0..req.subs.len())
                .map(|i| MultiResult::Error(if i < results.len() { 0 } else { ZkError::RuntimeInconsistency.code() }))
                .collect();
            (0, Response::Multi(failed))
        }
        Outcome::Ops(results) if req.op == OpCode::Multi => {
            let subs = (req.subs.iter())
                .zip(results)
                .map(|(op, r)| {
                    let op = multi_result_op(*op, rules);
                    MultiResult::Ok(op, body(op, r))
                })
                .collect();
            (0, Response::Multi(subs))
        }
        Outcome::Ops(results) => (0, results.first().map_or(Response::Empty, |r| body(req.op, r))),
        // A sync through the log (Keeper in a cluster) answers its path.
        Outcome::Noop => (0, req.path.clone().map_or(Response::Empty, Response::Path)),
        Outcome::SessionCreated(_) | Outcome::SessionClosed(_) => (0, Response::Empty),
    }
}

/// The result type a multi reply names for a successful sub-op. ZooKeeper 3.8 records a
/// create2 inside a multi as a plain create (type 1, no stat), while containers and TTL nodes
/// come back as create2 results with a stat (measured against 3.8.0); 3.9 answers a create2
/// with its stat too (ZOOKEEPER-4026, `Rules::multi_create2_stat`).
fn multi_result_op(op: OpCode, rules: &Rules) -> OpCode {
    match op {
        OpCode::Create2 if rules.multi_create2_stat => OpCode::Create2,
        OpCode::Create2 => OpCode::Create,
        OpCode::CreateContainer | OpCode::CreateTtl => OpCode::Create2,
        other => other,
    }
}

/// The body the op's line in the per-op table (`testkeeper_wire::opcode`) says it answers.
fn body(op: OpCode, result: &OpResult) -> Response {
    match (op.reply(), result) {
        (Reply::PathStat, OpResult::Created { path, stat }) => {
            Response::Create2 { path: path.clone(), stat: stat.clone() }
        }
        (Reply::Path, OpResult::Created { path, .. } | OpResult::Nothing { path }) => Response::Create(path.clone()),
        (Reply::Stat, OpResult::Set(stat)) => Response::Stat(stat.clone()),
        _ => Response::Empty,
    }
}

/// The watches a read registers, given how it ended: exists watches even a missing node (to
/// see its creation), getData and getChildren only an existing one.
pub fn watches_to_register(req: &Request, status: Result<(), ZkError>) -> Vec<(WatchKind, &str)> {
    let ok = status.is_ok();
    match req {
        Request::Exists(r) if r.watch && (ok || status == Err(ZkError::NoNode)) => vec![(WatchKind::Data, &r.path)],
        Request::GetData(r) if r.watch && ok => vec![(WatchKind::Data, &r.path)],
        Request::GetChildren(r) | Request::GetChildren2(r) if r.watch && ok => vec![(WatchKind::Child, &r.path)],
        Request::FilteredList(r) | Request::FilteredListWithStatsAndData(r) if r.watch && ok => {
            vec![(WatchKind::Child, &r.path)]
        }
        _ => Vec::new(),
    }
}
