//! ClickHouse's `test_keeper_zookeeper_converter` (tests/integration/test_keeper_zookeeper_converter
//! /test.py), ported: a real ZooKeeper (Debian's 3.8) writes a workload, stops (after a restart
//! that makes it write a snapshot, or with everything in its txn log), `testkeeper snapshot
//! convert` turns its data directory into a Keeper snapshot as `clickhouse keeper-converter`
//! does upstream, and a keeper-flavor testkeeper started from that file must hold the tree the
//! restarted ZooKeeper holds: data, every stat field (pzxid aside where upstream sets it aside),
//! children, ACLs, sequential counters, ephemerals that expire with their sessions.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use testkeeper_tests::env::{external_prereq, zookeeper_installed};
use testkeeper_tests::{testkeeper_bin, TestkeeperProcess, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{CheckVersionRequest, DeleteRequest, SetDataRequest};
use testkeeper_wire::{perms, Acl, CreateOp, OpCode, Request, Stat};

async fn client(addr: std::net::SocketAddr) -> Client {
    // Upstream's kazoo sessions; short, so the ephemerals go soon after the restart.
    let opts = ConnectOptions { timeout_ms: 4000, ..ConnectOptions::default() };
    Client::connect(addr, opts).await.expect("connect")
}

fn create(path: &str, data: &[u8], flags: i32) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: Acl::open(), flags };
    Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
}

/// What each upstream test writes into ZooKeeper before the conversion.
#[derive(Clone, Copy, Debug)]
enum Workload {
    Smoke,
    SimpleCrud,
    MultiAndFailed,
    Acls,
}

const AUTH: [&str; 3] = ["user1:password1", "user2:password2", "user3:password3"];

async fn write(c: &Client, w: Workload) {
    let open = Acl::open();
    match w {
        Workload::Smoke => {
            c.create("/test", b"data", &open, 0).await.unwrap();
        }
        Workload::SimpleCrud => {
            for i in 0..100 {
                c.create(&format!("/test_create{i}"), format!("data{i}").as_bytes(), &open, 0).await.unwrap();
            }
            for i in 0..10 {
                for j in 0..=i {
                    c.set_data(&format!("/test_create{i}"), format!("value{j}").as_bytes(), -1).await.unwrap();
                }
            }
            for i in 10..20 {
                c.delete(&format!("/test_create{i}"), -1).await.unwrap();
            }
            let mut path = "/test_create_deep".to_string();
            for i in 0..10 {
                c.create(&path, format!("data{i}").as_bytes(), &open, 0).await.unwrap();
                path = format!("{path}/{i}");
            }
            c.create("/test_sequential", b"", &open, 0).await.unwrap();
            for i in 0..10 {
                let p = format!("/test_sequential/{}-", "a".repeat(i));
                c.create(&p, format!("dataX{i}").as_bytes(), &open, create_mode::PERSISTENT_SEQUENTIAL).await.unwrap();
            }
            c.create("/test_ephemeral", b"", &open, 0).await.unwrap();
            for i in 0..10 {
                let p = format!("/test_ephemeral/{i}");
                c.create(&p, format!("dataX{i}").as_bytes(), &open, create_mode::EPHEMERAL).await.unwrap();
            }
        }
        Workload::MultiAndFailed => {
            c.create("/test_multitransactions", b"", &open, 0).await.unwrap();
            for i in 0..10 {
                let set = SetDataRequest {
                    path: "/test_multitransactions".into(),
                    data: Some(format!("somedata{i}").into_bytes()),
                    version: -1,
                };
                c.multi(vec![
                    create(&format!("/test_multitransactions/freddy{i}"), format!("data{i}").as_bytes(), 0),
                    create(&format!("/test_multitransactions/fred{i}"), format!("value{i}").as_bytes(), 1),
                    create(&format!("/test_multitransactions/smith{i}"), format!("entity{i}").as_bytes(), 2),
                    Request::SetData(set),
                ])
                .await
                .unwrap();
            }
            assert!(c.set_data("/test_multitransactions/freddy0", b"mustfail", 1).await.is_err());
            let check = Request::Check(CheckVersionRequest { path: "/test_multitransactions".into(), version: 32 });
            let _ = c
                .multi(vec![
                    create("/test_bad_transaction", b"data1", 0),
                    check,
                    create("/test_bad_transaction1", b"d", 0),
                ])
                .await;
            let delete = Request::Delete(DeleteRequest { path: "/test_multitransactions/freddy0".into(), version: 5 });
            let _ = c.multi(vec![create("/test_bad_transaction2", b"data1", 0), delete]).await;
            assert!(c.exists("/test_bad_transaction", false).await.unwrap().is_none());
            assert!(c.exists("/test_multitransactions/freddy0", false).await.unwrap().is_some());
        }
        Workload::Acls => {
            for a in AUTH {
                c.add_auth("digest", a.as_bytes()).await.unwrap();
            }
            let all = [Acl::new(perms::ALL, "auth", "")];
            c.create("/test_multi_all_acl", b"data", &all, 0).await.unwrap();
            c.set_data("/test_multi_all_acl", b"X", -1).await.unwrap();
            let some = [Acl::new(perms::ALL & !perms::WRITE, "auth", "")];
            c.set_acl("/test_multi_all_acl", &some, -1).await.unwrap();
        }
    }
}

/// Waits until `path` is gone (its owner's session expired).
async fn gone(c: &Client, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.exists(path, false).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "{path} outlived its session");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn same_stat(a: &Stat, b: &Stat, path: &str, pzxid: bool) {
    let fields = |s: &Stat| {
        (s.czxid, s.mzxid, s.version, s.cversion, s.aversion, s.ephemeral_owner, s.data_length, s.num_children)
    };
    assert_eq!(fields(a), fields(b), "{path}: (czxid, mzxid, version, cversion, aversion, owner, length, children)");
    if pzxid {
        assert_eq!(a.pzxid, b.pzxid, "{path}: pzxid");
    }
}

/// upstream `compare_states`: the whole tree, node by node; `/` and `/zookeeper` carry stats of
/// the servers' own making, and Keeper's root has `keeper` besides.
async fn compare(zk: &Client, tk: &Client, path: &str, no_pzxid: &[&str]) {
    let (d1, s1) = zk.get_data(path, false).await.unwrap();
    let (d2, s2) = tk.get_data(path, false).await.unwrap();
    assert_eq!(d1, d2, "{path}: data");
    if path != "/" && path != "/zookeeper" {
        same_stat(&s1, &s2, path, !no_pzxid.contains(&path));
    }
    let kids = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    let (k1, mut k2) =
        (kids(zk.get_children(path, false).await.unwrap()), kids(tk.get_children(path, false).await.unwrap()));
    if path == "/" {
        assert!(k2.remove("keeper"), "Keeper's root has /keeper");
    }
    assert_eq!(k1, k2, "{path}: children");
    for k in k1 {
        let child = if path == "/" { format!("/{k}") } else { format!("{path}/{k}") };
        Box::pin(compare(zk, tk, &child, no_pzxid)).await;
    }
}

fn convert(data_dir: &Path, out: &Path) {
    let out = Command::new(testkeeper_bin())
        .args(["snapshot", "convert", data_dir.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "convert: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn case(w: Workload, make_snapshot: bool) {
    let mut zk = ZooKeeperProcess::start();
    let c = client(zk.addr()).await;
    write(&c, w).await;
    drop(c);
    if make_snapshot {
        // ZooKeeper writes a snapshot as it starts.
        zk.restart().unwrap();
    }
    zk.stop();
    let out = tempfile::tempdir().unwrap();
    convert(&zk.data_dir(), out.path());
    zk.restart().unwrap();
    let file = std::fs::read_dir(out.path()).unwrap().next().unwrap().unwrap().path();
    let tk = TestkeeperProcess::start(&["--flavor", "keeper", "--import", file.to_str().unwrap()]);
    let (genuine, fake) = (client(zk.addr()).await, client(tk.addr()).await);
    // ZooKeeper's close of the expired session moves the ephemerals' parent's pzxid by its own
    // next zxid, testkeeper's by its own: upstream leaves that pzxid out, and so does this.
    let mut no_pzxid = Vec::new();
    match w {
        Workload::SimpleCrud => {
            for c in [&genuine, &fake] {
                gone(c, "/test_ephemeral/0").await;
            }
            no_pzxid.push("/test_ephemeral");
        }
        Workload::MultiAndFailed => {
            for c in [&genuine, &fake] {
                gone(c, "/test_multitransactions/fred0").await;
            }
            no_pzxid.push("/test_multitransactions");
        }
        Workload::Acls => {
            for c in [&genuine, &fake] {
                for a in AUTH {
                    c.add_auth("digest", a.as_bytes()).await.unwrap();
                }
            }
        }
        Workload::Smoke => {}
    }
    compare(&genuine, &fake, "/", &no_pzxid).await;
    match w {
        Workload::SimpleCrud => {
            // The sequential counters came across: the next name is the same on both.
            let p = format!("/test_sequential/{}-", "a".repeat(10));
            let a = genuine.create(&p, b"x", &Acl::open(), create_mode::PERSISTENT_SEQUENTIAL).await.unwrap();
            let b = fake.create(&p, b"x", &Acl::open(), create_mode::PERSISTENT_SEQUENTIAL).await.unwrap();
            assert_eq!(a, b);
        }
        Workload::Acls => {
            for c in [&genuine, &fake] {
                let (acls, stat) = c.get_acl("/test_multi_all_acl").await.unwrap();
                assert_eq!(stat.aversion, 1);
                assert_eq!(acls.len(), 3);
                for a in &acls {
                    assert_eq!((a.perms, a.id.scheme.as_str()), (29, "digest"));
                }
            }
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_converted_zookeeper_directory_serves_the_tree_zookeeper_serves() {
    if !external_prereq("Debian ZooKeeper", zookeeper_installed()) {
        return;
    }
    for make_snapshot in [true, false] {
        for w in [Workload::Smoke, Workload::SimpleCrud, Workload::MultiAndFailed, Workload::Acls] {
            eprintln!("{w:?}, snapshot {make_snapshot}");
            case(w, make_snapshot).await;
        }
    }
}
