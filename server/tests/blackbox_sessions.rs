//! Black-box over a real socket: handshakes, session timeouts and expiry on a controlled clock,
//! resumption per flavor, watches (order, exactly once), restart keeping the tree, Keeper's
//! system nodes and four-letter words.

mod blackbox_support;

use std::time::Duration;

use blackbox_support::{four_letter, server};

use testkeeper_server::clock::Clock;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::header::event_type;
use testkeeper_wire::{Acl, ZkError};

fn opts(timeout_ms: i32, read_only: Option<bool>) -> ConnectOptions {
    ConnectOptions { timeout_ms, read_only, auto_ping: false, ..ConnectOptions::default() }
}

#[tokio::test]
async fn handshake_lengths_and_timeout_clamps_follow_the_flavor() {
    let zk = server(Flavor::Zookeeper, Clock::System).await;
    let keeper = server(Flavor::Keeper, Clock::System).await;
    // ZooKeeper answers a 44-byte request with 36 bytes and a 45-byte one with 37 (3.8.0).
    let c = Client::connect(zk.addr(), opts(5000, None)).await.unwrap();
    assert_eq!((c.handshake_len(), c.negotiated_timeout_ms()), (36, 5000));
    let c = Client::connect(zk.addr(), opts(60000, Some(false))).await.unwrap();
    assert_eq!((c.handshake_len(), c.negotiated_timeout_ms()), (37, 40000));
    assert_ne!(c.session_passwd(), &[0u8; 16], "ZooKeeper hands out a real password");
    // Keeper always answers 36 bytes, a zero password, and clamps to [10000, 100000].
    let c = Client::connect(keeper.addr(), opts(5000, Some(false))).await.unwrap();
    assert_eq!((c.handshake_len(), c.negotiated_timeout_ms()), (36, 10000));
    assert_eq!(c.session_passwd(), &[0u8; 16]);
    assert_eq!(c.session_id(), 1, "Keeper numbers sessions from 1");
}

#[tokio::test]
async fn sessions_expire_on_the_server_clock_and_take_their_ephemerals() {
    let clock = Clock::manual(1_800_000_000_000);
    let tk = server(Flavor::Zookeeper, clock.clone()).await;
    let a = Client::connect(tk.addr(), opts(4000, Some(false))).await.unwrap();
    let mut b =
        Client::connect(tk.addr(), ConnectOptions { auto_ping: false, ..opts(40000, Some(false)) }).await.unwrap();
    let mut events = b.events().unwrap();
    a.create("/e", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
    assert!(b.exists("/e", true).await.unwrap().is_some());
    clock.advance(3999);
    tk.tick();
    assert!(b.exists("/e", false).await.unwrap().is_some(), "not yet expired");
    clock.advance(2);
    tk.tick();
    let ev = tokio::time::timeout(Duration::from_secs(5), events.recv()).await.unwrap().unwrap();
    assert_eq!((ev.event.event_type, ev.event.path.as_str()), (event_type::NODE_DELETED, "/e"));
    assert!(b.exists("/e", false).await.unwrap().is_none());
    // The expired session cannot be resumed.
    let resumed = Client::connect(tk.addr(), ConnectOptions::resume(a.session_id(), a.session_passwd().to_vec())).await;
    assert!(matches!(resumed, Err(ClientError::SessionExpired)), "{resumed:?}");
}

#[tokio::test]
async fn zookeeper_resumes_sessions_and_keeper_does_not() {
    let zk = server(Flavor::Zookeeper, Clock::System).await;
    let a = Client::connect(zk.addr(), ConnectOptions::default()).await.unwrap();
    a.create("/mine", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
    let again =
        Client::connect(zk.addr(), ConnectOptions::resume(a.session_id(), a.session_passwd().to_vec())).await.unwrap();
    assert_eq!(again.session_id(), a.session_id());
    assert_eq!(again.get_ephemerals("/").await.unwrap(), vec!["/mine".to_string()]);
    let bad = Client::connect(zk.addr(), ConnectOptions::resume(a.session_id(), vec![7; 16])).await;
    assert!(matches!(bad, Err(ClientError::SessionExpired)), "wrong password: {bad:?}");

    let keeper = server(Flavor::Keeper, Clock::System).await;
    let k = Client::connect(keeper.addr(), ConnectOptions::default()).await.unwrap();
    let k2 = Client::connect(keeper.addr(), ConnectOptions::resume(k.session_id(), k.session_passwd().to_vec()))
        .await
        .unwrap();
    assert_ne!(k2.session_id(), k.session_id(), "Keeper ignores previous_session_id (ClickHouse/ClickHouse#116690)");
}

#[tokio::test]
async fn a_watch_fires_once_and_before_the_reply_of_the_write_that_fired_it() {
    let tk = server(Flavor::Zookeeper, Clock::System).await;
    let mut c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    let mut events = c.events().unwrap();
    c.create("/w", b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    c.get_data("/w", true).await.unwrap();
    c.exists("/w", true).await.unwrap();
    let reply = c.call(testkeeper_wire::Request::SetData(testkeeper_wire::records::data::SetDataRequest {
        path: "/w".into(),
        data: Some(b"1".to_vec()),
        version: -1,
    }));
    let reply = reply.await.unwrap();
    let ev = events.try_recv().expect("event already delivered");
    assert_eq!(ev.event.event_type, event_type::NODE_DATA_CHANGED);
    assert!(ev.seq < reply.seq, "event {} must precede the reply {}", ev.seq, reply.seq);
    c.set_data("/w", b"2", -1).await.unwrap();
    c.ping().await.unwrap();
    assert!(events.try_recv().is_err(), "one-shot watches fire exactly once");
}

/// Issue 16: deleting `/r/a/b` under `addWatch(/r, PERSISTENT_RECURSIVE)` is one event in
/// each flavor: Keeper names the watched ancestor (`KeeperStorage::processWatchesImpl`, one
/// event per watched ancestor), ZooKeeper the deleted node.
#[tokio::test]
async fn a_delete_below_a_recursive_watch_is_one_event() {
    for (flavor, want) in [(Flavor::Keeper, "/r"), (Flavor::Zookeeper, "/r/a/b")] {
        let tk = server(flavor, Clock::System).await;
        let mut c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        let mut events = c.events().unwrap();
        for p in ["/r", "/r/a", "/r/a/b"] {
            c.create(p, b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
        }
        c.add_watch("/r", testkeeper_wire::records::watches::add_watch_mode::PERSISTENT_RECURSIVE).await.unwrap();
        // Events precede the reply of the write that fired them, so all are here by now.
        c.delete("/r/a/b", -1).await.unwrap();
        let mut got = Vec::new();
        while let Ok(ev) = events.try_recv() {
            got.push((ev.event.event_type, ev.event.path));
        }
        assert_eq!(got, vec![(event_type::NODE_DELETED, want.to_string())], "{flavor}");
    }
}

#[tokio::test]
async fn restart_keeps_the_tree_and_the_digest() {
    let mut tk = server(Flavor::Keeper, Clock::System).await;
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    c.create("/keep", b"v", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    let digest = tk.digest();
    drop(c);
    tk.restart().await.unwrap();
    assert_eq!(tk.digest(), digest);
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    assert_eq!(c.get_data("/keep", false).await.unwrap().0, b"v");
}

#[tokio::test]
async fn keeper_serves_what_it_advertises() {
    let tk = server(Flavor::Keeper, Clock::System).await;
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    assert_eq!(c.get_data("/keeper/feature_flags", false).await.unwrap().0, vec![0xC0, 0x00]);
    assert_eq!(c.get_data("/keeper/api_version", false).await.unwrap().0, b"2");
    // multi_read is advertised, so it is served.
    let r = c
        .multi_read(vec![testkeeper_wire::Request::GetData(testkeeper_wire::records::data::GetDataRequest {
            path: "/nope".into(),
            watch: false,
        })])
        .await
        .unwrap();
    assert_eq!(
        r,
        vec![testkeeper_wire::MultiResult::OpError(testkeeper_wire::OpCode::GetData, ZkError::NoNode.code())]
    );
    assert_eq!(c.create("/keeper/x", b"", &Acl::open(), 0).await, Err(ClientError::Zk(ZkError::BadArguments)));
}

#[tokio::test]
async fn four_letter_words_per_flavor() {
    let keeper = server(Flavor::Keeper, Clock::System).await;
    assert_eq!(four_letter(keeper.addr(), "ruok").await, "imok");
    let mntr = four_letter(keeper.addr(), "mntr").await;
    assert!(mntr.contains(&format!("zk_nodes_digest\t{}\n", keeper.digest())), "{mntr}");
    assert!(mntr.contains("zk_digest_version\t5\n"));
    assert_eq!(four_letter(keeper.addr(), "dump").await, "", "not in Keeper's default allow list: closed silently");
    assert!(four_letter(keeper.addr(), "envi").await.contains("zookeeper.version=3.8"));
    assert_eq!(four_letter(keeper.addr(), "ftfl").await.lines().next(), Some("filtered_list\t1"));
    let zk = server(Flavor::Zookeeper, Clock::System).await;
    assert!(four_letter(zk.addr(), "srvr").await.starts_with("Zookeeper version: 3.8"));
    assert_eq!(four_letter(zk.addr(), "ftfl").await, "", "ZooKeeper does not know ftfl");
}

/// Keeper's `pfev` answers its request counters (`name\tvalue\tdescription`), and its `cons`
/// leaves out a connection that never finished a handshake, the asking one included
/// (`KeeperTCPHandler::dumpStats`); ZooKeeper's lists it (checked live by zk_quirks.rs).
#[tokio::test]
async fn keeper_pfev_counts_requests_and_cons_skips_the_asker() {
    let tk = server(Flavor::Keeper, Clock::System).await;
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    for p in ["/p1", "/p2"] {
        c.create(p, b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    }
    c.get_data("/p1", false).await.unwrap();
    let pfev = four_letter(tk.addr(), "pfev").await;
    assert!(pfev.contains("KeeperCreateRequest\t2\tNumber of create requests\n"), "{pfev}");
    assert!(pfev.contains("KeeperGetRequest\t1\tNumber of get requests\n"), "{pfev}");
    assert!(pfev.lines().all(|l| l.split('\t').count() == 3), "{pfev}");
    let cons = four_letter(tk.addr(), "cons").await;
    assert_eq!(cons.lines().filter(|l| !l.is_empty()).count(), 1, "only the client's connection: {cons}");
    assert!(cons.contains(&format!("sid=0x{:016x}", c.session_id())), "{cons}");
    let zk = server(Flavor::Zookeeper, Clock::System).await;
    let cons = four_letter(zk.addr(), "cons").await;
    assert!(cons.starts_with(" /127.0.0.1:") && cons.ends_with("[0](queued=0,recved=1,sent=0)\n\n"), "{cons:?}");
}
