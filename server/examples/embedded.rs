//! Embedding testkeeper in a test: start on port 0, talk to it with any ZooKeeper client,
//! expire a session on demand, restart keeping the tree, shut down.
//!
//! Run with `cargo run -p testkeeper-server --example embedded`.

use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut cfg = ServerConfig::new(Flavor::Zookeeper);
    cfg.listen = "127.0.0.1:0".parse()?;
    let mut server = TestKeeper::start(cfg).await?;
    println!("listening on {}", server.connect_string());

    let client = Client::connect(server.addr(), ConnectOptions::default()).await?;
    client.create("/app", b"config", &Acl::open(), create_mode::PERSISTENT).await?;
    client.create("/app/lock", b"", &Acl::open(), create_mode::EPHEMERAL).await?;
    println!("digest after two creates: {}", server.digest());

    // Expire the session as if its timeout had passed: its ephemeral goes with it.
    server.expire_session(client.session_id());
    let other = Client::connect(server.addr(), ConnectOptions::default()).await?;
    assert!(other.exists("/app/lock", false).await?.is_none());

    // Restart on the same address; the tree survives.
    drop(other);
    server.restart().await?;
    let again = Client::connect(server.addr(), ConnectOptions::default()).await?;
    let (data, _) = again.get_data("/app", false).await?;
    assert_eq!(data, b"config");
    println!("after restart /app = {:?}", String::from_utf8_lossy(&data));
    server.shutdown().await;
    Ok(())
}
