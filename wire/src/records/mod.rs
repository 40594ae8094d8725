//! Jute records, one family per file, each in the field order of `zookeeper.jute`.
//!
//! # Layout
//! - `header`: request/reply headers and watch events.
//! - `stat`, `acl`: the shared `Stat`, `Id` and `ACL` records.
//! - `connect`: the handshake (44/45-byte request, 36/37-byte response).
//! - `create`, `data`, `children`, `watches`, `session`: per-op requests and responses.
//! - `multi`: the multi/multiRead framing with per-op headers.
//! - `keeper_ext`: ClickHouse Keeper-only records (opcodes 500..507).

/// Declares a plain jute record: a struct whose fields are encoded in declaration order.
///
/// Each field names its jute kind: `i32`, `i64`, `bool`, `str`, `buf`, `obuf` (a buffer that
/// may be null), `vec` or `rec`.
macro_rules! record {
    ($(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* $field:ident : $ty:ty [$kind:ident] ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name { $( $(#[$fm])* pub $field: $ty, )* }

        impl $crate::jute::Encode for $name {
            #[allow(unused_variables)]
            fn encode(&self, out: &mut bytes::BytesMut) {
                $( record!(@enc $kind, out, &self.$field); )*
            }
        }

        impl $crate::jute::Decode for $name {
            #[allow(unused_variables)]
            fn decode(r: &mut $crate::jute::Reader<'_>) -> Result<Self, $crate::error::DecodeError> {
                Ok($name { $( $field: record!(@dec $kind, r, concat!(stringify!($name), ".", stringify!($field))), )* })
            }
        }
    };
    (@enc i32, $o:ident, $v:expr) => { $crate::jute::put_i32($o, *$v) };
    (@enc i64, $o:ident, $v:expr) => { $crate::jute::put_i64($o, *$v) };
    (@enc bool, $o:ident, $v:expr) => { $crate::jute::put_bool($o, *$v) };
    (@enc str, $o:ident, $v:expr) => { $crate::jute::put_str($o, $v) };
    (@enc buf, $o:ident, $v:expr) => { $crate::jute::put_bytes($o, $v) };
    (@enc obuf, $o:ident, $v:expr) => { $crate::jute::put_opt_bytes($o, $v.as_deref()) };
    (@enc vec, $o:ident, $v:expr) => { $crate::jute::put_vec($o, $v) };
    (@enc rec, $o:ident, $v:expr) => { $crate::jute::Encode::encode($v, $o) };
    (@dec i32, $r:ident, $w:expr) => { $r.i32($w)? };
    (@dec i64, $r:ident, $w:expr) => { $r.i64($w)? };
    (@dec bool, $r:ident, $w:expr) => { $r.bool($w)? };
    (@dec str, $r:ident, $w:expr) => { $r.string($w)? };
    (@dec buf, $r:ident, $w:expr) => { $r.buffer($w)? };
    (@dec obuf, $r:ident, $w:expr) => { $r.opt_buffer($w)? };
    (@dec vec, $r:ident, $w:expr) => { $r.vec($w)? };
    (@dec rec, $r:ident, $w:expr) => { $crate::jute::Decode::decode($r)? };
}

pub mod acl;
pub mod children;
pub mod connect;
pub mod create;
pub mod data;
pub mod header;
pub mod keeper_ext;
pub mod multi;
pub mod session;
pub mod stat;
pub mod watches;
