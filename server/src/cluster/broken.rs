//! The leader half of the deliberately broken `forget-acked-on-leader-change` mode (the chaos
//! checkers' self-test, see `crate::broken`): the leader answers a client of its own as soon
//! as it has decided the client's entry (`cluster/lead.rs`), before a quorum has it. It learns
//! the answer by applying every entry it decides to a private copy of the state. If the leader then loses
//! its term before the entry commits, the new leader never had it: an acknowledged write is
//! forgotten, which is what the checkers must catch.

use testkeeper_core::state::State;
use testkeeper_core::txn::{Entry, Txn};

use crate::broken::Broken;
use crate::config::ServerConfig;
use crate::engine::Engine;

/// The leader's speculative copy of the state, in the broken mode only.
pub(crate) struct EarlyAck {
    spec: State,
}

impl EarlyAck {
    /// `Some` when `cfg` asks for the broken mode: a copy of the state the new proposer
    /// starts from.
    pub(crate) fn new(cfg: &ServerConfig, state: &State) -> Option<EarlyAck> {
        (cfg.broken == Some(Broken::ForgetAckedOnLeaderChange)).then(|| EarlyAck { spec: state.clone() })
    }

    /// The leader decided `entry`: apply it to the copy and, for a client write whose
    /// connection is on this node (`local`), answer it now.
    pub(crate) fn decided(&mut self, engine: &mut Engine, entry: &Entry, local: bool) {
        // A proposal that was taken back leaves a gap the copy cannot follow: stop acking.
        if entry.index() != self.spec.last_index() + 1 {
            return;
        }
        let Ok(applied) = self.spec.apply(entry) else { return };
        let client_write = matches!(entry.txn(), Txn::Ops(_) | Txn::Failed(_) | Txn::MultiFailed(_));
        if local && client_write {
            engine.answer_early(entry, &applied.outcome);
        }
    }
}
