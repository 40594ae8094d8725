//! Test harness for the core: drives prepare and apply directly, with a fake clock and no
//! network, and keeps the log so tests can replay it.

use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{DeleteRequest, SetDataRequest};
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

use super::acl::AuthId;
use super::apply::{Applied, Outcome};
use super::digest::DIGEST_VERSION;
use super::flavor::{Flavor, Rules};
use super::prepare::Ctx;
use super::state::{State, StateOptions};
use super::txn::{Entry, Txn};

/// A state machine plus the log of everything applied to it.
pub struct Harness {
    pub state: State,
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
        Harness { state: State::new(&opts), log: Vec::new(), now: 1_700_000_000_000, opts }
    }

    pub fn commit(&mut self, session: i64, txn: Txn) -> Applied {
        self.now += 1;
        let consumes = !matches!(txn, Txn::CreateSession { .. }) || self.state.rules.create_session_consumes_zxid;
        let zxid = self.state.zxid + i64::from(consumes);
        let mut entry = Entry { index: self.log.len() as u64 + 1, zxid, time_ms: self.now, session, txn, digest: None };
        let applied = self.state.apply(&entry);
        entry.digest = Some((DIGEST_VERSION, applied.digest));
        self.log.push(entry);
        applied
    }

    pub fn session(&mut self) -> i64 {
        let txn = self.state.prepare_create_session(30_000);
        match self.commit(0, txn).outcome {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        }
    }

    pub fn write_as(&mut self, session: i64, auth: &[AuthId], req: &Request) -> Applied {
        let txn = self.state.prepare(req, &Ctx { session, auth });
        self.commit(session, txn)
    }

    pub fn write(&mut self, session: i64, req: &Request) -> Applied {
        self.write_as(session, &[], req)
    }

    /// Replays the whole log on a fresh state, verifying every entry's digest.
    pub fn replay(&self) -> State {
        let mut s = State::new(&self.opts);
        for e in &self.log {
            s.apply(e);
        }
        s
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
