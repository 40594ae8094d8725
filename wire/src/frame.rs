//! Length-prefixed framing, with no I/O: tells "need more bytes" from "bad bytes".
//!
//! Every message on a ZooKeeper connection is an i32 big-endian length followed by that many
//! bytes. The length is checked against the configured maximum (ZooKeeper's `jute.maxbuffer`,
//! 1 MiB - 1 by default) *before* anything is allocated for the body.

use bytes::{BufMut, BytesMut};
use thiserror::Error;

use crate::jute::Encode;
use crate::records::header::{ReplyHeader, RequestHeader};
use crate::request::Request;
use crate::response::Response;

/// ZooKeeper's default `jute.maxbuffer`: 0xfffff bytes.
pub const DEFAULT_MAX_FRAME: usize = 0xfffff;

/// Why a frame was refused. The connection that sent it is closed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// The length prefix is negative.
    #[error("negative frame length {0}")]
    Negative(i32),
    /// The length prefix exceeds the maximum frame size.
    #[error("frame length {len} exceeds the maximum of {max} bytes")]
    TooLarge { len: usize, max: usize },
}

/// Looks at the front of `buf` for one complete frame.
///
/// Returns `Ok(None)` when more bytes are needed, or `Ok(Some(n))` where `buf[4..n]` is the body.
///
/// # Errors
/// [`FrameError`] when the length prefix is negative or too large.
pub fn split_frame(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    // The streaming parser reports `Incomplete` for fewer than 4 bytes; that is "need more",
    // and it stays inside this function.
    let len = match nom::number::streaming::be_i32::<_, nom::error::Error<&[u8]>>(buf) {
        Ok((_, len)) => len,
        Err(_) => return Ok(None),
    };
    if len < 0 {
        return Err(FrameError::Negative(len));
    }
    let len = len as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok((buf.len() >= 4 + len).then_some(4 + len))
}

/// If the first four bytes of a connection spell a four-letter word (`ruok`, `mntr`...),
/// returns it. ClickHouse Keeper treats anything that is not a handshake length this way.
pub fn four_letter_word(first: &[u8; 4]) -> Option<&str> {
    if first.iter().all(u8::is_ascii_lowercase) {
        std::str::from_utf8(first).ok()
    } else {
        None
    }
}

/// Appends a length-prefixed frame whose body is written by `body`.
pub fn put_frame(out: &mut BytesMut, body: impl FnOnce(&mut BytesMut)) {
    let start = out.len();
    out.put_i32(0);
    body(out);
    let len = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends a framed request: header then body.
pub fn put_request(out: &mut BytesMut, xid: i32, req: &Request) {
    put_frame(out, |out| {
        RequestHeader { xid, op: req.op() as i32 }.encode(out);
        req.encode_body(out);
    });
}

/// Appends a framed reply. A non-zero `err` carries no body, as on the real servers.
pub fn put_reply(out: &mut BytesMut, header: &ReplyHeader, body: &Response) {
    put_reply_with(out, header, |out| body.encode(out));
}

/// Appends a framed reply whose body `body` writes, and only when `err` is 0: for a server
/// that encodes a reply from what it holds without building a `Response` first.
pub fn put_reply_with(out: &mut BytesMut, header: &ReplyHeader, body: impl FnOnce(&mut BytesMut)) {
    put_frame(out, |out| {
        header.encode(out);
        if header.err == 0 {
            body(out);
        }
    });
}

/// Appends any framed record (handshakes, watch events).
pub fn put_record<T: Encode>(out: &mut BytesMut, rec: &T) {
    put_frame(out, |out| rec.encode(out));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_more_vs_bad() {
        assert_eq!(split_frame(&[], 100), Ok(None));
        assert_eq!(split_frame(&[0, 0, 0], 100), Ok(None));
        assert_eq!(split_frame(&[0, 0, 0, 2, 1], 100), Ok(None));
        assert_eq!(split_frame(&[0, 0, 0, 2, 1, 2, 3], 100), Ok(Some(6)));
        assert_eq!(split_frame(&[0xff, 0xff, 0xff, 0xff], 100), Err(FrameError::Negative(-1)));
        // The length alone is enough to refuse: nothing of the body has arrived.
        assert_eq!(split_frame(&[0, 0x10, 0, 0], 0xfffff), Err(FrameError::TooLarge { len: 0x100000, max: 0xfffff }));
    }

    #[test]
    fn put_frame_prefixes_length() {
        let mut out = BytesMut::new();
        put_frame(&mut out, |o| o.put_slice(b"abc"));
        assert_eq!(&out[..], &[0, 0, 0, 3, b'a', b'b', b'c']);
    }

    #[test]
    fn four_letter_words() {
        assert_eq!(four_letter_word(b"ruok"), Some("ruok"));
        assert_eq!(four_letter_word(&[0, 0, 0, 44]), None);
    }
}
