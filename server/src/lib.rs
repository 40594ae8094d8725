//! testkeeper's server: a ClickHouse-Keeper-compatible ZooKeeper-protocol server for tests.
//!
//! # Layout
//! - [`core`]: the deterministic state machine (prepare, apply, digest, watches, flavors).
//! - [`faults`]: seeded, protocol-aware fault injection hooked into the engine's request path.
//! - [`http`]: the admin HTTP endpoint (`/ready`, `/metrics`, 4lw commands, fault control).
pub mod clock;
pub mod config;
pub mod core;
pub mod embed;
pub mod engine;
pub mod faults;
pub mod features;
pub mod fourlw;
pub mod http;
pub mod net;
