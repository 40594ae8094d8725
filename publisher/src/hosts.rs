//! Simulated ClickHouse hosts: DDLWorker's wire behaviour, without ClickHouse.
//!
//! Each host has its own session. It watches the queue (a getChildren watch, with a short
//! re-poll in case a watch is lost with its connection), keeps only `query-` names, and for
//! each entry naming it: creates `active`/`finished` if missing, claims the entry with an
//! ephemeral `active/<host>` holding its canary, "executes" (records the generation the query
//! installs at `<sim_root>/replicas/<host>`), then one multi removes `active/<host>` and
//! creates `finished/<host>` with the `ExecutionStatus` text. After a loss it checks whether
//! its status was written (DDLWorker's "distributed systems is a zoo" case) before redoing.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::data::DeleteRequest;
use testkeeper_wire::{Request, ZkError};
use tokio::task::JoinHandle;

use crate::ddl::{queue_entries, DdlEntry, ExecutionStatus};

/// What a host does with the entries it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behavior {
    /// Executes and reports 0.
    Succeed,
    /// Reports this ClickHouse error code without installing the generation.
    Fail(i32),
    /// Claims the entry and never finishes (its session stays alive).
    Stall,
    /// Claims the entry, then its session ends (the `active` node goes with it).
    Die,
}

/// The host id in entries: `name:9000`.
pub fn host_id(i: usize) -> String {
    format!("host{i}:9000")
}

/// Running simulated hosts; dropping them aborts their tasks (sessions then time out).
pub struct Hosts {
    tasks: Vec<JoinHandle<()>>,
    /// Session id of each host's first session, for faults scoped to a host.
    pub sessions: Vec<i64>,
}

impl Hosts {
    /// Connects one session per behaviour and starts the workers.
    ///
    /// # Errors
    /// A failed connect.
    pub async fn start(
        addr: SocketAddr,
        queue: &str,
        sim_root: &str,
        behaviors: Vec<Behavior>,
    ) -> Result<Hosts, ClientError> {
        let mut tasks = Vec::new();
        let mut sessions = Vec::new();
        for (i, b) in behaviors.into_iter().enumerate() {
            let client = Client::connect(addr, ConnectOptions::default()).await?;
            sessions.push(client.session_id());
            let w = Worker {
                addr,
                id: host_id(i),
                queue: queue.into(),
                sim_root: sim_root.into(),
                behavior: b,
                done: BTreeSet::new(),
            };
            tasks.push(tokio::spawn(w.run(client)));
        }
        Ok(Hosts { tasks, sessions })
    }

    /// Stops every worker.
    pub fn stop(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Worker {
    addr: SocketAddr,
    id: String,
    queue: String,
    sim_root: String,
    behavior: Behavior,
    /// Entries this host finished (or decided not to run).
    done: BTreeSet<String>,
}

/// What one pass over an entry ended with.
enum Step {
    Done,
    /// The host stops for good (stalled or dead).
    Park,
}

impl Worker {
    async fn run(mut self, first: Client) {
        let mut client = Some(first);
        loop {
            let mut c = match client.take() {
                Some(c) => c,
                None => match Client::connect(self.addr, ConnectOptions::default()).await {
                    Ok(c) => c,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let mut events = c.events();
            loop {
                match self.pass(&c, &mut events).await {
                    // Parked: holding the client keeps a stalled host's session alive.
                    Ok(true) => std::future::pending::<()>().await,
                    Ok(false) => {}
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        break;
                    }
                }
            }
        }
    }

    /// One scan of the queue, then a wait for the watch (or a short timeout). `Ok(true)` parks.
    async fn pass(
        &mut self,
        c: &Client,
        events: &mut Option<tokio::sync::mpsc::UnboundedReceiver<testkeeper_wire::client::Event>>,
    ) -> Result<bool, ClientError> {
        let names = match c.get_children(&self.queue, true).await {
            Ok(n) => queue_entries(n),
            Err(ClientError::Zk(ZkError::NoNode)) => Vec::new(),
            Err(e) => return Err(e),
        };
        for name in names {
            if self.done.contains(&name) {
                continue;
            }
            if let Step::Park = self.process(c, &name).await? {
                return Ok(true);
            }
            self.done.insert(name);
        }
        // The watch wakes us; the timeout covers a watch lost with a connection.
        match events.as_mut() {
            Some(ev) => {
                if let Ok(None) = tokio::time::timeout(Duration::from_millis(200), ev.recv()).await {
                    return Err(ClientError::ConnectionLoss(testkeeper_wire::client::LossReason::Eof));
                }
            }
            None => tokio::time::sleep(Duration::from_millis(30)).await,
        }
        Ok(false)
    }

    async fn process(&mut self, c: &Client, name: &str) -> Result<Step, ClientError> {
        let entry_path = format!("{}/{name}", self.queue);
        let (data, _) = match c.get_data(&entry_path, false).await {
            Ok(d) => d,
            Err(ClientError::Zk(ZkError::NoNode)) => return Ok(Step::Done),
            Err(e) => return Err(e),
        };
        let Some(entry) = DdlEntry::parse(&String::from_utf8_lossy(&data)) else { return Ok(Step::Done) };
        if !entry.hosts.contains(&self.id) {
            return Ok(Step::Done);
        }
        let finished = format!("{entry_path}/finished/{}", self.id);
        // After a lost reply the status may already be there: never execute twice.
        if c.exists(&finished, false).await?.is_some() {
            return Ok(Step::Done);
        }
        for dir in ["active", "finished"] {
            match c.create(&format!("{entry_path}/{dir}"), b"", &crate::open_acl(), 0).await {
                Ok(_) | Err(ClientError::Zk(ZkError::NodeExists)) => {}
                Err(e) => return Err(e),
            }
        }
        let active = format!("{entry_path}/active/{}", self.id);
        let canary = format!("canary-{}-{:x}", self.id, c.session_id());
        match c.create(&active, canary.as_bytes(), &crate::open_acl(), create_mode::EPHEMERAL).await {
            Ok(_) | Err(ClientError::Zk(ZkError::NodeExists)) => {}
            Err(e) => return Err(e),
        }
        let status = match &self.behavior {
            Behavior::Stall => return Ok(Step::Park),
            Behavior::Die => {
                let _ = c.close().await;
                return Ok(Step::Park);
            }
            Behavior::Fail(code) => {
                ExecutionStatus { code: *code, message: format!("simulated failure on {}", self.id) }
            }
            Behavior::Succeed => {
                let generation = staged_table(&entry.query).unwrap_or_default();
                let replica = format!("{}/replicas/{}", self.sim_root, self.id);
                match c.set_data(&replica, generation.as_bytes(), -1).await {
                    Ok(_) => {}
                    Err(ClientError::Zk(ZkError::NoNode)) => {
                        c.create(&replica, generation.as_bytes(), &crate::open_acl(), 0).await?;
                    }
                    Err(e) => return Err(e),
                }
                ExecutionStatus { code: 0, message: String::new() }
            }
        };
        let ops = vec![
            Request::Delete(DeleteRequest { path: active, version: -1 }),
            crate::create_request(&finished, status.to_text().as_bytes(), 0),
        ];
        c.multi(ops).await?;
        Ok(Step::Done)
    }
}

/// The staging table an `EXCHANGE TABLES a AND b` installs: `b`, unquoted.
pub fn staged_table(query: &str) -> Option<String> {
    let rest = query.split(" AND ").nth(1)?;
    Some(rest.split_whitespace().next()?.replace('`', ""))
}
