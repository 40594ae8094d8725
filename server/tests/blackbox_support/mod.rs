//! Shared by the black-box tests: a server on a free loopback port, and a four-letter word
//! asked over its own connection.

use testkeeper_server::clock::Clock;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server of `flavor` on 127.0.0.1 port 0, on `clock`.
pub async fn server(flavor: Flavor, clock: Clock) -> TestKeeper {
    let mut cfg = ServerConfig::new(flavor);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    TestKeeper::start_with_clock(cfg, clock).await.expect("start")
}

/// Sends `word` on a fresh connection and reads the answer until the server closes it.
pub async fn four_letter(addr: std::net::SocketAddr, word: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(word.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}
