//! "Someone else's data": a tree a vendor's deployment already holds when the conformance
//! suite runs against it (persistent, sequential and ephemeral nodes, set data, an ACL), and a
//! snapshot of it, so a test can show a run left it exactly as it was.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::{perms, Acl};

/// Where the foreign tree lives.
pub const FOREIGN_ROOT: &str = "/their_app";

/// The session holding the foreign ephemerals; keep it alive while the suite runs.
pub struct Foreign {
    _owner: Client,
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
}

/// Path to (data, version, cversion, numChildren) of every node under [`FOREIGN_ROOT`].
pub type Snapshot = BTreeMap<String, (Vec<u8>, i32, i32, i32)>;

impl Foreign {
    /// Creates the tree on `addr` (about 60 nodes).
    ///
    /// # Panics
    /// When the server refuses any of it.
    pub fn preload(addr: SocketAddr) -> Foreign {
        // A worker thread of its own keeps the owner session pinging between calls.
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let owner = rt.block_on(async {
            let c = Client::connect(addr, ConnectOptions::default()).await.expect("connect");
            let open = Acl::open();
            c.create(FOREIGN_ROOT, b"theirs", &open, 0).await.expect("foreign root");
            for i in 0..20 {
                let p = format!("{FOREIGN_ROOT}/n{i}");
                c.create(&p, format!("v{i}").as_bytes(), &open, 0).await.expect("create");
                c.set_data(&p, b"changed", -1).await.expect("set");
                c.create(&format!("{p}/seq-"), b"", &open, 2).await.expect("sequential");
            }
            for i in 0..10 {
                c.create(&format!("{FOREIGN_ROOT}/eph{i}"), b"", &open, 1).await.expect("ephemeral");
            }
            c.create(&format!("{FOREIGN_ROOT}/ro"), b"", &[Acl::new(perms::READ, "world", "anyone")], 0)
                .await
                .expect("read-only node");
            // Top-level siblings of the suite's own root, as other applications have.
            for name in ["/clickhouse_like", "/another_tenant"] {
                let _ = c.create(name, b"", &open, 0).await;
            }
            c
        });
        Foreign { _owner: owner, rt, addr }
    }

    /// Reads the whole foreign tree.
    ///
    /// # Panics
    /// When a read fails.
    pub fn snapshot(&self) -> Snapshot {
        self.rt.block_on(async {
            let c = Client::connect(self.addr, ConnectOptions::default()).await.expect("connect");
            let mut out = Snapshot::new();
            let mut todo = vec![FOREIGN_ROOT.to_string()];
            while let Some(p) = todo.pop() {
                let (data, stat) = c.get_data(&p, false).await.expect("get");
                out.insert(p.clone(), (data, stat.version, stat.cversion, stat.num_children));
                for k in c.get_children(&p, false).await.expect("children") {
                    todo.push(format!("{p}/{k}"));
                }
            }
            let _ = c.close().await;
            out
        })
    }

    /// The children of `/`, sorted.
    ///
    /// # Panics
    /// When the read fails.
    pub fn root_children(&self) -> Vec<String> {
        self.rt.block_on(async {
            let c = Client::connect(self.addr, ConnectOptions::default()).await.expect("connect");
            let mut kids = c.get_children("/", false).await.expect("children of /");
            kids.sort();
            let _ = c.close().await;
            kids
        })
    }
}
