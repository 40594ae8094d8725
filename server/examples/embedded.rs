//! Embedding testkeeper in a test: one line to a server on a free port, any ZooKeeper client,
//! an outage on the same address, a session expired on demand, `reset` between tests.
//!
//! Run with `cargo run -p testkeeper-server --example embedded`.

use std::time::Duration;

use testkeeper_server::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut server = TestKeeper::builder().flavor(Flavor::Zookeeper).start().await?;
    println!("listening on {}", server.connect_string());

    let client = Client::connect(server.addr(), ConnectOptions::default()).await?;
    client.create("/app", b"config", &Acl::open(), create_mode::PERSISTENT).await?;
    client.create("/app/lock", b"", &Acl::open(), create_mode::EPHEMERAL).await?;
    println!("digest after two creates: {}", server.digest());

    // Expire the session as if its timeout had passed: its ephemeral goes with it.
    server.expire_session(client.session_id());
    server.await_no_node("/app/lock").await?;

    // Half a second of outage on the same address; the tree is still there after it.
    server.outage(Duration::from_millis(500)).await?;
    let again = Client::connect(server.addr(), ConnectOptions::default()).await?;
    let (data, _) = again.get_data("/app", false).await?;
    assert_eq!(data, b"config");
    println!("after the outage /app = {:?}", String::from_utf8_lossy(&data));

    // Between tests: an empty tree, no sessions, no fault rules, the same address.
    server.reset().await?;
    assert!(!server.exists("/app"));
    server.shutdown().await;
    Ok(())
}
