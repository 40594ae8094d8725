//! The bodies of the fuzz targets, kept here as plain functions so the same code runs under
//! `cargo fuzz` on nightly and under proptest on stable (see the tests below):
//!
//! - `frame_decode` ([`check_frames`]) feeds arbitrary bytes through the framing and every
//!   decoder a server or client applies to a frame;
//! - `request_body` ([`check_request_bodies`]) feeds arbitrary bytes to `Request::decode_body`
//!   as the body of every opcode, known or not, as the server does after the request header.
//!
//! Both assert two things: nothing panics, and whatever decodes re-encodes to bytes that decode
//! to the same value (and re-encode to the same bytes again). docs/fuzzing.md has the runs.
//!
//! # Layout
//! - this file: [`check_frames`], [`check_request_bodies`] and their checks, plus the proptests.
//! - `seeds`: one valid frame of every request and reply shape, to mutate and to seed a corpus.

#[doc(hidden)]
pub mod seeds;

use std::fmt::Debug;

use bytes::BytesMut;

use crate::frame::{split_frame, DEFAULT_MAX_FRAME};
use crate::jute::{Decode, Encode, Reader};
use crate::opcode::OpCode;
use crate::records::connect::{ConnectRequest, ConnectResponse};
use crate::records::header::{ReplyHeader, RequestHeader, WatcherEvent};
use crate::request::Request;
use crate::response::Response;

/// Splits `data` into frames as a connection would, and checks every complete one.
///
/// # Panics
/// When a decoder panics, or a decoded value does not survive re-encoding: both are bugs.
pub fn check_frames(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some(n)) = split_frame(rest, DEFAULT_MAX_FRAME) {
        check_frame_body(&rest[4..n]);
        rest = &rest[n..];
    }
}

/// Runs one frame body through every decoder that could meet it.
pub fn check_frame_body(body: &[u8]) {
    // What a server does with it: a request header, then the body by opcode.
    let mut r = Reader::new(body);
    if let Ok(h) = RequestHeader::decode(&mut r) {
        if let Ok(req) = Request::decode_body(h.op, r.remaining()) {
            check_request(&req);
        }
    }
    // What a client does with it: a reply header, then the body as a reply to any opcode.
    let mut r = Reader::new(body);
    if let Ok(h) = ReplyHeader::decode(&mut r) {
        check_responses(r.remaining());
        if h.xid == crate::opcode::WATCH_XID {
            check_record::<WatcherEvent>(r.remaining());
        }
    }
    // The body as a reply without its header, so mutations reach the body decoders directly.
    check_responses(body);
    // Handshake frames have no header at all.
    check_record::<ConnectRequest>(body);
    check_record::<ConnectResponse>(body);
}

/// Opcodes no server knows, tried after every real one: an unknown op must be an error, never
/// a panic or a decoded request.
const UNKNOWN_OPS: [i32; 6] = [-2, 10, 23, 499, 508, i32::MIN];

/// Decodes `body` as the request body of every opcode (and of a few unknown ones), checking
/// every request that decodes.
///
/// # Panics
/// When a decoder panics, an unknown opcode decodes, or a decoded request does not survive
/// re-encoding: all are bugs.
pub fn check_request_bodies(body: &[u8]) {
    for &op in OpCode::ALL {
        if let Ok(req) = Request::decode_body(op as i32, body) {
            check_request(&req);
        }
    }
    for op in UNKNOWN_OPS {
        assert!(Request::decode_body(op, body).is_err(), "unknown opcode {op} decoded");
    }
}

fn check_responses(body: &[u8]) {
    for &op in OpCode::ALL {
        if let Ok(resp) = Response::decode(op, body) {
            let mut out = BytesMut::new();
            resp.encode(&mut out);
            let back =
                Response::decode(op, &out).unwrap_or_else(|e| panic!("re-encoded {op:?} reply fails: {e}: {resp:?}"));
            assert_eq!(back, resp, "{op:?} reply changed across re-encoding");
            let mut again = BytesMut::new();
            back.encode(&mut again);
            assert_eq!(again, out, "{op:?} reply encoding is not stable");
        }
    }
}

fn check_request(req: &Request) {
    let op = req.op() as i32;
    let mut out = BytesMut::new();
    req.encode_body(&mut out);
    let back = Request::decode_body(op, &out).unwrap_or_else(|e| panic!("re-encoded request fails: {e}: {req:?}"));
    assert_eq!(&back, req, "request changed across re-encoding");
    let mut again = BytesMut::new();
    back.encode_body(&mut again);
    assert_eq!(again, out, "request encoding is not stable");
}

fn check_record<T: Encode + Decode + PartialEq + Debug>(body: &[u8]) {
    if let Ok(v) = T::decode(&mut Reader::new(body)) {
        let out = v.to_bytes();
        let back = T::decode_exact(&out).unwrap_or_else(|e| panic!("re-encoded record fails: {e}: {v:?}"));
        assert_eq!(back, v, "record changed across re-encoding");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One edit to a frame body: overwrite, insert, delete, or truncate at a position.
    fn mutate(body: &mut Vec<u8>, (pos, byte, kind): (usize, u8, u8)) {
        let at = if body.is_empty() { 0 } else { pos % body.len() };
        match kind {
            0 if !body.is_empty() => body[at] = byte,
            1 => body.insert(at, byte),
            2 if !body.is_empty() => {
                body.remove(at);
            }
            3 => body.truncate(at),
            // Set a whole big-endian i32 (a length, a count, an opcode) to an edge value.
            _ if body.len() >= at + 4 => {
                let v: i32 = [-1, 0, 1, i32::MAX, i32::MIN, 0x7f, 14, 22][usize::from(byte % 8)];
                body[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            _ => {}
        }
    }

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn every_seed_decodes_and_passes() {
        // The seeds are only worth mutating if they are valid to begin with.
        for req in seeds::requests() {
            let mut out = BytesMut::new();
            req.encode_body(&mut out);
            assert_eq!(Request::decode_body(req.op() as i32, &out).as_ref(), Ok(&req));
        }
        for (op, resp) in seeds::responses() {
            let mut out = BytesMut::new();
            resp.encode(&mut out);
            assert_eq!(Response::decode(op, &out).as_ref(), Ok(&resp));
        }
        let seeds = seeds::seed_bodies();
        assert!(seeds.len() > 40, "a seed for every shape");
        for body in &seeds {
            check_frames(&framed(body));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn random_request_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            check_request_bodies(&body);
        }

        #[test]
        fn mutated_request_bodies_never_panic(
            pick in any::<usize>(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..6), 1..6),
        ) {
            let seeds = seeds::request_bodies();
            let mut body = seeds[pick % seeds.len()].clone();
            for e in edits {
                mutate(&mut body, e);
            }
            check_request_bodies(&body);
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            check_frames(&data);
        }

        #[test]
        fn random_frames_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            check_frames(&framed(&body));
        }

        #[test]
        fn mutated_valid_frames_never_panic(
            pick in any::<usize>(),
            next in any::<usize>(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..6), 1..6),
            raw in any::<bool>(),
        ) {
            let seeds = seeds::seed_bodies();
            let mut body = seeds[pick % seeds.len()].clone();
            if raw {
                // Mutate the length prefix too, and follow with another frame.
                let mut stream = framed(&body);
                for e in edits {
                    mutate(&mut stream, e);
                }
                stream.extend_from_slice(&framed(&seeds[next % seeds.len()]));
                check_frames(&stream);
            } else {
                for e in edits {
                    mutate(&mut body, e);
                }
                check_frames(&framed(&body));
            }
        }
    }

    /// Writes the seeds as starting corpora for `cargo fuzz`, one directory per target:
    /// `FUZZ_SEED_DIR=fuzz/corpus cargo test -p testkeeper-wire write_fuzz_seeds -- --ignored`.
    #[test]
    #[ignore]
    fn write_fuzz_seeds() {
        let dir = std::env::var("FUZZ_SEED_DIR").expect("FUZZ_SEED_DIR");
        let corpora = [
            ("frame_decode", seeds::seed_bodies().iter().map(|b| framed(b)).collect::<Vec<_>>()),
            ("request_body", seeds::request_bodies()),
        ];
        for (target, seeds) in corpora {
            std::fs::create_dir_all(format!("{dir}/{target}")).expect("create seed dir");
            for (i, seed) in seeds.iter().enumerate() {
                std::fs::write(format!("{dir}/{target}/seed-{i:03}"), seed).expect("write seed");
            }
        }
    }
}
