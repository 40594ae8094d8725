//! multi: every op is prepared against one view; the first failure fails them all with the
//! exact per-op vector (0 before it, its code, RUNTIMEINCONSISTENCY after), and the view (the
//! pending changes) is simply dropped: nothing was applied, nothing needs undoing.

use testkeeper_wire::{Request, ZkError};

use super::view::View;
use super::{prepare_op, Ctx};
use crate::state::State;
use crate::txn::Txn;

pub(super) fn prepare(state: &State, ops: &[Request], ctx: &Ctx<'_>) -> Txn {
    let mut view = View::new(&state.tree);
    let mut decided = Vec::with_capacity(ops.len());
    for (i, req) in ops.iter().enumerate() {
        match prepare_op(state, &mut view, req, ctx) {
            Ok(op) => decided.push(op),
            Err(e) => {
                let mut codes = vec![0; i];
                codes.push(e.code());
                codes.resize(ops.len(), ZkError::RuntimeInconsistency.code());
                return Txn::MultiFailed(codes);
            }
        }
    }
    Txn::Ops(decided)
}
