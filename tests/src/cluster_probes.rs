//! Probes of a cluster's behaviour that an Apache ZooKeeper 3.8 ensemble answers as the
//! oracle: each runs the same steps on any [`ClusterControl`] and returns a transcript of
//! what the clients got, in words, to be compared line by line with the ensemble's.
//!
//! - [`session_move`]: a session resumes on another server; what one request on its old
//!   connection gets (a read, a sync or a write), with the old connection on a follower or on
//!   the leader.
//! - [`leader_gone`]: a client on a follower when the leader dies, when the quorum is lost
//!   (new sessions and resumptions refused), and when it comes back (the session lives on).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

use crate::cluster_control::ClusterControl;

const WAIT: Duration = Duration::from_secs(60);
/// Requested session timeout: long enough to outlive a JVM restart on a loaded machine.
const SESSION_MS: i32 = 30_000;
/// More requests than a [`session_move`] sends on the new connection.
const OLD_XID_LEAD: usize = 16;

/// What a request of a probe got, in words.
fn outcome<T>(r: &Result<T, ClientError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) if e.is_connection_loss() => "the connection closed".into(),
        Err(ClientError::Zk(z)) => z.name().to_string(),
        Err(e) => e.to_string(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

fn opts() -> ConnectOptions {
    ConnectOptions { timeout_ms: SESSION_MS, ..Default::default() }
}

async fn connect(addr: SocketAddr) -> Client {
    Client::connect(addr, opts()).await.unwrap_or_else(|e| panic!("connect to {addr}: {e}"))
}

/// How a connect attempt went, in words.
async fn try_connect(addr: SocketAddr, o: ConnectOptions) -> (String, Option<Client>) {
    let o = ConnectOptions { connect_timeout: Duration::from_secs(5), ..o };
    match Client::connect(addr, o).await {
        Ok(c) => ("accepted".into(), Some(c)),
        Err(ClientError::SessionExpired) => ("answered: session expired".into(), None),
        Err(ClientError::Connect(_) | ClientError::ConnectTimeout) => {
            ("refused (closed without an answer)".into(), None)
        }
        Err(e) => (format!("failed: {e}"), None),
    }
}

/// Waits up to `within` for `c`'s connection to end.
async fn closes_within(c: &Client, within: Duration) -> bool {
    let until = Instant::now() + within;
    while !c.is_closed() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.is_closed()
}

/// Which request the old connection sends after its session moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OldRequest {
    Read,
    Sync,
    Write,
}

/// A session made on one server (a follower, or the leader when `old_on_leader`) resumes on
/// another follower, which writes and syncs; then the old connection sends `req`.
///
/// # Errors
/// No leader.
pub fn session_move(c: &mut dyn ClusterControl, old_on_leader: bool, req: OldRequest) -> Result<Vec<String>, String> {
    let leader = c.await_leader(WAIT)?;
    let followers: Vec<u64> = c.ids().into_iter().filter(|i| *i != leader).collect();
    let (a, b) = if old_on_leader { (leader, followers[0]) } else { (followers[0], followers[1]) };
    let (addr_a, addr_b) = (c.addr(a), c.addr(b));
    let tag = format!("{}-{}", if old_on_leader { "l" } else { "f" }, format!("{req:?}").to_lowercase());
    let mut t =
        vec![format!("old connection on the {}, request {req:?}", if old_on_leader { "leader" } else { "follower" })];
    runtime().block_on(async {
        let old = connect(addr_a).await;
        let eph = format!("/moved-{tag}");
        t.push(format!("ephemeral: {}", outcome(&old.create(&eph, b"", &Acl::open(), create_mode::EPHEMERAL).await)));
        // As a real client resumes: with the last zxid it saw, so a server that has not caught
        // up refuses it (ZooKeeper: "client must try another server") and it tries again.
        let seen = old.exists(&eph, false).await.ok().flatten().map_or(0, |s| s.czxid);
        // Two connections of one session number their requests each from 1, and a ZooKeeper
        // 3.8 follower matches a committed entry to its own pending request by (session,
        // xid) (CommitProcessor): under load the old connection's refused write (an error
        // entry, xid 3) reached the follower while the new connection's sync with xid 3
        // waited there, and closed the new connection. A real client keeps one counter per
        // session; these reads put the old connection's xids past the new one's.
        for _ in 0..OLD_XID_LEAD {
            let _ = old.exists(&eph, false).await;
        }
        let mut o = ConnectOptions::resume(old.session_id(), old.session_passwd().to_vec());
        o.last_zxid_seen = seen;
        let until = Instant::now() + Duration::from_secs(10);
        let (how, new) = loop {
            let (how, new) = try_connect(addr_b, o.clone()).await;
            if new.is_some() || !how.starts_with("refused") || Instant::now() > until {
                break (how, new);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let new = new.ok_or_else(|| format!("resume on node {b}: {how}"))?;
        t.push(format!("resume on another server: {how}, same session {}", new.session_id() == old.session_id()));
        // As ZooKeeper's own SessionTest.testSessionMoved: the new connection writes and syncs.
        let marker = format!("/moved-{tag}-new");
        t.push(format!("new connection writes: {}", outcome(&new.create(&marker, b"", &Acl::open(), 0).await)));
        t.push(format!("new connection syncs: {}", outcome(&new.sync("/").await)));
        let late = format!("/moved-{tag}-old");
        let got = match req {
            OldRequest::Read => outcome(&old.get_data(&eph, false).await),
            OldRequest::Sync => outcome(&old.sync("/").await),
            OldRequest::Write => outcome(&old.create(&late, b"", &Acl::open(), 0).await),
        };
        t.push(format!("old connection's {req:?}: {got}"));
        t.push(format!("old connection closed afterwards: {}", closes_within(&old, Duration::from_secs(2)).await));
        let _ = new.sync("/").await;
        if req == OldRequest::Write {
            t.push(format!(
                "old connection's write applied: {}",
                new.exists(&late, false).await.ok().flatten().is_some()
            ));
            // ZooKeeper's refusal is an error txn: it takes a zxid between the new
            // connection's two writes.
            let after = format!("/moved-{tag}-after");
            let _ = new.create(&after, b"", &Acl::open(), 0).await;
            let m = new.exists(&marker, false).await.ok().flatten().map_or(0, |s| s.czxid);
            let a = new.exists(&after, false).await.ok().flatten().map_or(0, |s| s.czxid);
            t.push(format!("zxids taken between the new connection's writes: {}", a - m - 1));
        }
        let owner = new.exists(&eph, false).await.ok().flatten().map(|s| s.ephemeral_owner);
        t.push(format!("ephemeral still the session's: {}", owner == Some(new.session_id())));
        t.push(format!("new connection still serves: {}", outcome(&new.get_data("/", false).await)));
        let _ = new.close().await;
        Ok(t)
    })
}

/// A client on a follower: the leader dies (and a new one is elected), then the other
/// follower too (no quorum), then one server comes back.
///
/// # Errors
/// No leader, or a node that does not restart.
pub fn leader_gone(c: &mut dyn ClusterControl) -> Result<Vec<String>, String> {
    let leader = c.await_leader(WAIT)?;
    let f = c.ids().into_iter().find(|i| *i != leader).expect("a follower");
    let addr = c.addr(f);
    let rt = runtime();
    let mut t = Vec::new();
    let client = rt.block_on(connect(addr));
    let (session, passwd) = (client.session_id(), client.session_passwd().to_vec());
    let resume = || ConnectOptions { timeout_ms: SESSION_MS, ..ConnectOptions::resume(session, passwd.clone()) };
    t.push(format!(
        "ephemeral: {}",
        outcome(&rt.block_on(client.create("/gone-e", b"", &Acl::open(), create_mode::EPHEMERAL)))
    ));
    c.kill(leader);
    t.push(format!(
        "client on a follower when the leader dies: closed {}",
        rt.block_on(closes_within(&client, Duration::from_secs(20)))
    ));
    let second = c.await_leader(WAIT)?;
    let (how, back) = rt.block_on(try_connect(addr, resume()));
    t.push(format!("resume once a new leader is elected: {how}"));
    let back = back.ok_or("no resumption")?;
    t.push(format!("same session: {}", back.session_id() == session));
    let eph = rt.block_on(back.exists("/gone-e", false)).ok().flatten().map(|s| s.ephemeral_owner);
    t.push(format!("its ephemeral: {}", if eph == Some(session) { "kept" } else { "gone" }));
    // Leave `f` alone: kill the other survivor, so no quorum is left.
    let other = c.ids().into_iter().find(|i| *i != leader && *i != f).expect("three nodes");
    c.kill(other);
    t.push(format!(
        "client when the quorum is lost: closed {}",
        rt.block_on(closes_within(&back, Duration::from_secs(20)))
    ));
    // Give the lone server time to notice (ZooKeeper at once; Raft within an election timeout).
    std::thread::sleep(Duration::from_secs(2));
    t.push(format!("a new session without a quorum: {}", rt.block_on(try_connect(addr, opts())).0));
    t.push(format!("a resumption without a quorum: {}", rt.block_on(try_connect(addr, resume())).0));
    c.restart(leader)?;
    c.await_leader(WAIT)?;
    let (how, again) = rt.block_on(try_connect(addr, resume()));
    t.push(format!("resume once the quorum is back: {how}"));
    if let Some(again) = again {
        let eph = rt.block_on(again.exists("/gone-e", false)).ok().flatten().map(|s| s.ephemeral_owner);
        t.push(format!(
            "same session: {}, its ephemeral {}",
            again.session_id() == session,
            if eph == Some(session) { "kept" } else { "gone" }
        ));
        let _ = rt.block_on(again.close());
    }
    c.restart(other)?;
    let _ = second;
    Ok(t)
}
