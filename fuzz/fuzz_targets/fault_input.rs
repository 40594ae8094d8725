//! Fuzz target: arbitrary bytes as a fault rule (the text of `--fault`, `faults add` and
//! `POST /api/v1/faults`) and, when they are JSON, as the admin API's JSON rule, then through
//! matching and drawing: nothing may panic (the server aborts on any panic).
//!
//! The body lives in `testkeeper_server::faults::fuzzing` so a proptest runs the same checks
//! on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    testkeeper_server::faults::fuzzing::check_fault_input(data);
});
