//! Test harness for the core: drives the proposer and apply directly, with a fake clock and no
//! network, and keeps the log so tests can replay it.

use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{DeleteRequest, SetDataRequest};
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

use super::acl::AuthId;
use super::apply::{Applied, DigestMismatch, Outcome};
use super::flavor::{Flavor, Rules};
use super::propose::{Decide, Proposer};
use super::state::{State, StateOptions};
use super::txn::Entry;

/// A state machine, its proposer, and the log of everything applied.
pub struct Harness {
    pub state: State,
    pub proposer: Proposer,
    pub log: Vec<Entry>,
    pub now: i64,
    opts: StateOptions,
}

impl Harness {
    pub fn new(flavor: Flavor) -> Harness {
        let opts = StateOptions {
            rules: Rules::new(flavor, 0x0100_0000_0000_0000),
            digest_enabled: true,
            feature_flags: vec![0xC0, 0],
            api_version: b"2".to_vec(),
            zookeeper_config: Vec::new(),
        };
        let state = State::new(&opts);
        Harness { proposer: Proposer::new(&state, 1), state, log: Vec::new(), now: 1_700_000_000_000, opts }
    }

    /// Decides the next entry without committing it (pipelining).
    pub fn propose(&mut self, session: i64, what: Decide<'_>) -> Entry {
        self.now += 1;
        self.proposer.propose(&self.state, session, self.now, 0, what)
    }

    /// Commits a proposed entry, in order.
    pub fn commit(&mut self, entry: Entry) -> Applied {
        let applied = self.state.apply(&entry).unwrap_or_else(|e| panic!("{e}"));
        self.proposer.committed(entry.index());
        self.log.push(entry);
        applied
    }

    /// Decides and commits at once, as standalone in-memory mode does.
    pub fn run(&mut self, session: i64, what: Decide<'_>) -> Applied {
        let entry = self.propose(session, what);
        self.commit(entry)
    }

    pub fn session(&mut self) -> i64 {
        match self.run(0, Decide::CreateSession { timeout_ms: 30_000, passwd: [7; 16] }).outcome {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        }
    }

    pub fn close(&mut self, id: i64) -> Applied {
        self.run(id, Decide::CloseSession { id })
    }

    pub fn write_as(&mut self, session: i64, auth: &[AuthId], req: &Request) -> Applied {
        self.run(session, Decide::Write { req, auth })
    }

    pub fn write(&mut self, session: i64, req: &Request) -> Applied {
        self.write_as(session, &[], req)
    }

    /// Replays the whole log on a fresh state, verifying every entry's digest.
    ///
    /// # Errors
    /// The first entry whose digest differs.
    pub fn replay(&self) -> Result<State, DigestMismatch> {
        let mut s = State::new(&self.opts);
        for e in &self.log {
            s.apply(e)?;
        }
        Ok(s)
    }
}

pub fn create(path: &str, data: &[u8], flags: i32) -> Request {
    Request::Create(CreateOp {
        op: OpCode::Create,
        req: CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: Acl::open(), flags },
        ttl: 0,
    })
}

pub fn create_op(op: OpCode, path: &str, flags: i32, ttl: i64) -> Request {
    Request::Create(CreateOp { op, req: CreateRequest { path: path.into(), data: None, acl: Acl::open(), flags }, ttl })
}

pub fn delete(path: &str, version: i32) -> Request {
    Request::Delete(DeleteRequest { path: path.into(), version })
}

pub fn set(path: &str, data: &[u8], version: i32) -> Request {
    Request::SetData(SetDataRequest { path: path.into(), data: Some(data.to_vec()), version })
}
