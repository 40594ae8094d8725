//! testkeeper's server: a ClickHouse-Keeper-compatible ZooKeeper-protocol server for tests.
//!
//! # Layout
//! - [`core`]: the deterministic state machine (prepare, apply, digest, watches, flavors).
pub mod core;
pub mod clock;
pub mod config;
pub mod engine;
pub mod features;
pub mod fourlw;
pub mod net;
pub mod embed;
