//! An embedded server on a data directory: writes survive a crash and a restart recovers them
//! from disk; with the simulated disk, a crash loses exactly what was not flushed.
//!
//! Run with `cargo run -p testkeeper-server --example durable`.

use testkeeper_server::config::LogBackend;
use testkeeper_server::log::sim::SimDisk;
use testkeeper_server::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // Keeper flavor on a free port, the log and snapshots in `dir` (fsync always, the default).
    let mut server = TestKeeper::builder().data_dir(dir.path()).start().await?;
    let zk = Client::connect(server.addr(), ConnectOptions::default()).await?;
    zk.create("/job", b"queued", &Acl::open(), create_mode::PERSISTENT).await?;
    let index = server.snapshot().expect("a data directory takes snapshots");
    zk.set_data("/job", b"running", 0).await?;

    // No clean shutdown; the restart reads the snapshot and replays the log after it.
    server.crash().await;
    server.restart().await?;
    let r = server.recovery().expect("recovered from the data directory");
    let loaded = r.snapshot.as_ref().map(|s| (s.index, s.bytes));
    println!("recovered: snapshot (index, bytes) {loaded:?}, {} entries replayed after it", r.replayed);
    assert_eq!(loaded.map(|(i, _)| i), Some(index));
    assert_eq!(server.data("/job").as_deref(), Some(&b"running"[..]));
    server.shutdown().await;

    // The simulated disk knows what was synced: a crash keeps that and loses the rest.
    let disk = SimDisk::new();
    let sim_dir = tempfile::tempdir()?;
    let mut server = TestKeeper::builder()
        .data_dir(sim_dir.path())
        .config({
            let disk = disk.clone();
            move |c| c.log_backend = LogBackend::Sim(disk)
        })
        .start()
        .await?;
    let zk = Client::connect(server.addr(), ConnectOptions::default()).await?;
    zk.create("/acked", b"", &Acl::open(), create_mode::PERSISTENT).await?;
    server.settled().await;
    println!("synced up to index {}", disk.synced_index());
    server.crash().await;
    server.restart().await?;
    assert!(server.exists("/acked"), "an acknowledged write was synced before its reply");
    server.shutdown().await;
    Ok(())
}
