//! Multi framing: every sub-op is preceded by a `MultiHeader {type, done, err}` and the list ends
//! with `{-1, true, -1}`. Used by multi (14) and multiRead (22), requests and replies.

use bytes::BytesMut;

use crate::error::DecodeError;
use crate::jute::{put_bool, put_i32, Decode, Encode, Reader};

record! {
    /// The header before each sub-op, and the terminator.
    pub struct MultiHeader { op: i32 [i32], done: bool [bool], err: i32 [i32] }
}

impl MultiHeader {
    /// The terminator that ends every multi list.
    pub const END: MultiHeader = MultiHeader { op: -1, done: true, err: -1 };

    /// Writes the terminator.
    pub fn encode_end(out: &mut BytesMut) {
        put_i32(out, -1);
        put_bool(out, true);
        put_i32(out, -1);
    }

    /// Reads one header, rejecting a terminator that is not exactly `{-1, true, -1}`.
    ///
    /// # Errors
    /// Truncated or Malformed.
    pub fn read(r: &mut Reader<'_>) -> Result<MultiHeader, DecodeError> {
        let h = MultiHeader::decode(r)?;
        if h.done && h != MultiHeader::END {
            return Err(DecodeError::Malformed("multi terminator"));
        }
        Ok(h)
    }
}

impl MultiHeader {
    /// Header of a sub-op (not done).
    pub fn op(op: i32, err: i32) -> MultiHeader {
        MultiHeader { op, done: false, err }
    }
}

/// Convenience: encode a header followed by a body.
pub fn put_sub<T: Encode>(out: &mut BytesMut, header: &MultiHeader, body: &T) {
    header.encode(out);
    body.encode(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn multi_header_round_trips_and_checks_terminator() {
        check_round_trip(&MultiHeader::op(1, -1));
        check_round_trip(&MultiHeader::END);
        let bad = MultiHeader { op: 1, done: true, err: -1 }.to_bytes();
        assert!(MultiHeader::read(&mut Reader::new(&bad)).is_err());
    }
}
