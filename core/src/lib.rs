//! The deterministic core: no tokio, no clock, no randomness.
//!
//! # Layout
//! - `state`: the committed, replicated state (tree, sessions, zxid, last index).
//! - `propose`: the leader's decision: a request in, the next log entry out, decided against
//!   the committed state plus the uncommitted overlay (`pending`); `prepare/` validates each op.
//! - `apply/`: the only mutator; it commits entries to the tree and stages them on the overlay.
//! - `tree`, `node`, `path`: the data tree and its rules; `arena` and `blob` hold its nodes compactly.
//! - `digest`: Keeper's per-node SipHash digest, summed into the tree digest.
//! - `txn`: the closed set of decided changes and the log entry; `codec` its byte encoding.
//! - `read`: reads against the committed tree.
//! - `watches`: the (per-server) watch table and how changes fire it.
//! - `acl`, `flavor`: ACL rules, and every Keeper/ZooKeeper difference as data.
//! - `unknown_name`: the error of parsing a name that is not one of a fixed set.

pub mod acl;
mod acl_table;
pub mod apply;
mod arena;
mod blob;
pub mod codec;
pub mod digest;
pub mod flavor;
pub mod node;
pub mod path;
pub mod pending;
pub mod prepare;
pub mod propose;
pub mod read;
pub mod snapshot;
pub mod state;
pub mod tree;
pub mod txn;
pub mod unknown_name;
pub mod watches;

#[cfg(test)]
mod digest_props;
#[cfg(test)]
mod digest_vectors;
#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod semantics_tests;
#[cfg(test)]
pub(crate) mod testutil;
