//! The network shell: a listener that accepts connections, and one task pair per connection
//! (a reader that frames, decodes and hands requests to the engine; a writer that drains the
//! connection's outgoing queue). A bad frame closes only its own connection. The engine is
//! reached through `engine::Shared`.
//!
//! # Layout
//! - `listener`: accept loop and server-wide shutdown.
//! - `conn`: one connection: four-letter words, handshake, request loop.
//! - `writer`: the outgoing half, batching queued frames into few writes.

pub mod conn;
pub mod listener;
mod writer;
