//! The ZooKeeper wire protocol as spoken by Apache ZooKeeper and ClickHouse Keeper.
//!
//! Pure codec: no tokio, no sockets. Records encode into `BytesMut` and decode from the exact
//! slice of one frame; a short body inside a complete frame is an error, never "need more".
//! The async client (feature `client`) is the only part that does I/O.
//!
//! # Layout
//! - [`jute`]: primitives and the `Encode`/`Decode` traits.
//! - [`records`]: one file per family of `zookeeper.jute` records, plus Keeper's extensions.
//! - [`request`], [`response`]: the one enum of request bodies and of reply bodies.
//! - [`frame`]: length-prefixed framing with the maximum size checked first.
//! - [`opcode`], [`error`]: `#[repr(i32)]` opcodes and error codes.
//! - `client` (feature): a small pipelined async client over the same records.
//! - `net` (feature `client`): the streams both ends talk over: TCP, or a simulation's pipes.
//! - `fuzzing` (hidden): the decode-everything check behind `fuzz/` and its proptests.

// No unsafe code: the decoders face untrusted bytes, and it is why the fuzz runs need no
// memory sanitizer (docs/fuzzing.md).
#![forbid(unsafe_code)]

#[macro_use]
pub mod records;
pub mod error;
pub mod frame;
// The body of the `frame_decode` fuzz target, shared with its stable proptest twin.
#[doc(hidden)]
pub mod fuzzing;
pub mod jute;
pub mod opcode;
pub mod rawstr;
pub mod request;
pub mod response;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
pub mod net;

pub use error::{DecodeError, ZkError};
pub use opcode::OpCode;
pub use records::acl::{perms, Acl, Id};
pub use records::stat::Stat;
pub use request::{CreateOp, Request};
pub use response::{MultiResult, Response};
