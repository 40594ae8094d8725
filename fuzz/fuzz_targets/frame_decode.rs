//! Fuzz target: arbitrary bytes through the framing and every request, reply, event and
//! handshake decoder, checking that nothing panics and that decoded values re-encode stably.
//!
//! The body lives in `testkeeper_wire::fuzzing` so a proptest runs the same checks on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    testkeeper_wire::fuzzing::check_frames(data);
});
