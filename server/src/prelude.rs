//! What a test that embeds a server needs, in one import: `use testkeeper_server::prelude::*;`.
//!
//! The client is testkeeper-wire's async client (crate `testkeeper-wire`, feature `client`),
//! re-exported here while this crate's `client` feature is on (the default), so a test
//! depends on `testkeeper-server` alone.

pub use crate::clock::Clock;
pub use crate::config::ServerConfig;
pub use crate::core::flavor::Flavor;
pub use crate::embed::{Builder, TestKeeper, WaitTimeout};
pub use crate::faults::FaultEvent;
#[cfg(feature = "client")]
pub use testkeeper_wire::client::{Client, ClientError, ConnectOptions, Event};
pub use testkeeper_wire::records::create::create_mode;
pub use testkeeper_wire::{Acl, Stat, ZkError};
