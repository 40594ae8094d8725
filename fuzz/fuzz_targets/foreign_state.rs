//! Fuzz target: arbitrary bytes as another server's state (a decompressed Keeper snapshot,
//! ClickHouse compressed blocks, a ZooKeeper snapshot, a ZooKeeper txn applied twice), each
//! built into a state as `serve --import` builds it: nothing may panic (the server aborts on
//! any panic).
//!
//! The body lives in `testkeeper_server::interop::fuzzing` so a proptest runs the same checks
//! on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    testkeeper_server::interop::fuzzing::check_foreign_state(data);
});
