//! The body of the `foreign_state` fuzz target (`fuzz/fuzz_targets/foreign_state.rs`), here so
//! a proptest runs the same checks on stable in every test run: arbitrary bytes as a
//! decompressed Keeper snapshot, as ClickHouse compressed blocks, as a ZooKeeper snapshot
//! (each then built into a state), and as one ZooKeeper txn applied to a fresh state. Nothing
//! may panic: `serve --import` runs in the server process, which aborts on any panic.

use std::path::Path;

use testkeeper_core::flavor::Flavor;
use testkeeper_core::state::{State, StateOptions};

use super::zookeeper::{snap, txnlog};
use super::{build, ch_blocks, keeper};

fn options(flavor: Flavor) -> StateOptions {
    crate::engine::Engine::fresh_options(&crate::config::ServerConfig::new(flavor), 0)
}

/// Feeds `data` to every foreign-state reader.
pub fn check_foreign_state(data: &[u8]) {
    let file = Path::new("fuzz");
    let (keeper_opts, zk_opts) = (options(Flavor::Keeper), options(Flavor::Zookeeper));
    if let Ok(f) = keeper::parse(data) {
        if let Ok(state) = build(&f, &keeper_opts, file) {
            // What imports must export, unless it holds what V6 cannot.
            let _ = keeper::export(&state);
        }
    }
    let _ = ch_blocks::decode(data);
    if let Ok(f) = snap::parse(data) {
        let _ = build(&f, &zk_opts, file);
    }
    let mut state = State::new(&zk_opts);
    let mut replay = txnlog::Replay::new(0);
    // The same bytes as a txn, and again: the second meets the first's effects.
    let _ = replay.txn(data, file, &mut state);
    let _ = replay.txn(data, file, &mut state);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::check_foreign_state;

    /// A create txn of ZooKeeper's log: header, then path, data, ACL, ephemeral, cversion.
    fn create_txn(path: &str) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(&7_i64.to_be_bytes());
        t.extend_from_slice(&1_i32.to_be_bytes());
        t.extend_from_slice(&5_i64.to_be_bytes());
        t.extend_from_slice(&1_700_000_000_000_i64.to_be_bytes());
        t.extend_from_slice(&1_i32.to_be_bytes());
        t.extend_from_slice(&(path.len() as i32).to_be_bytes());
        t.extend_from_slice(path.as_bytes());
        t.extend_from_slice(&(-1_i32).to_be_bytes());
        t.extend_from_slice(&0_i32.to_be_bytes());
        t.push(1);
        t.extend_from_slice(&0_i32.to_be_bytes());
        t
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            check_foreign_state(&data);
        }

        #[test]
        fn mutated_txns_never_panic(i in 0usize..64, b in any::<u8>(), path in "/[a-z]{1,3}(/[a-z]{1,2}){0,2}") {
            let mut t = create_txn(&path);
            let i = i % t.len();
            t[i] = b;
            check_foreign_state(&t);
        }
    }

    #[test]
    fn a_valid_create_txn_applies() {
        let mut state = testkeeper_core::state::State::new(&super::options(testkeeper_core::flavor::Flavor::Zookeeper));
        let mut replay = super::txnlog::Replay::new(0);
        replay.txn(&create_txn("/x"), std::path::Path::new("t"), &mut state).unwrap();
        assert!(state.tree().get("/x").is_some_and(|n| n.owner() == 7));
    }
}
