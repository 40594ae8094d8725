//! Round trips through the foreign formats, built from the format descriptions in `keeper` and
//! `zookeeper`, and damaged input refused with the file and offset named.

use testkeeper_core::flavor::{Flavor, Rules};
use testkeeper_core::state::{State, StateOptions};

use super::keeper;

fn opts(flavor: Flavor) -> StateOptions {
    StateOptions {
        rules: Rules::new(flavor, 0x1000_0000_0000),
        digest_enabled: true,
        feature_flags: vec![1, 2],
        api_version: b"3".to_vec(),
        zookeeper_config: Vec::new(),
    }
}

#[test]
fn an_exported_keeper_snapshot_imports_to_the_same_tree_and_digest() {
    let state = State::new(&opts(Flavor::Keeper));
    let bytes = keeper::export(&state).unwrap();
    let foreign = keeper::read(&bytes).unwrap();
    assert_eq!(foreign.stored_digest, Some(state.tree().digest()));
    let back = super::build(&foreign, &opts(Flavor::Keeper), std::path::Path::new("x")).unwrap();
    assert_eq!(back.tree().digest(), state.tree().digest());
    assert_eq!(back.tree().paths(), state.tree().paths());
}
