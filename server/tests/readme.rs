//! README.md's Rust example, compiled and run as written: the block below must be the first
//! ```rust block of README.md, character for character, so the two cannot drift apart.

// README BEGIN
use testkeeper_server::prelude::*;

#[tokio::test]
async fn survives_an_outage() -> Result<(), Box<dyn std::error::Error>> {
    let mut server = TestKeeper::start_default().await?; // keeper flavor, 127.0.0.1:<free>
    let zk = Client::connect(server.addr(), ConnectOptions::default()).await?;
    zk.create("/app", b"v1", &Acl::open(), create_mode::PERSISTENT).await?;
    server.outage(std::time::Duration::from_millis(200)).await?; // stop(), wait, resume(): same address
    server.expire_session(zk.session_id()); // as if its timeout passed
    server.await_sessions(0).await?;
    server.reset().await?; // empty tree, no sessions, no faults
    Ok(())
}
// README END

#[test]
fn readme_shows_this_file_s_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let block =
        readme.split("```rust\n").nth(1).and_then(|b| b.split("```").next()).expect("a rust block in README.md");
    let me = include_str!("readme.rs");
    let mine = me.split("// README BEGIN\n").nth(1).and_then(|b| b.split("// README END").next()).unwrap();
    assert_eq!(block, mine, "README.md's example and server/tests/readme.rs differ");
    assert!(block.lines().count() <= 20, "the README example should fit on one screen");
}
