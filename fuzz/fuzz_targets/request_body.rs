//! Fuzz target: arbitrary bytes as the request body of every opcode (`Request::decode_body`,
//! what the server runs after a request header), checking that nothing panics, that unknown
//! opcodes never decode, and that decoded requests re-encode stably.
//!
//! The body lives in `testkeeper_wire::fuzzing` so a proptest runs the same checks on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    testkeeper_wire::fuzzing::check_request_bodies(data);
});
