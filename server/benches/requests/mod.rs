//! The requests both benchmarks build (`core.rs`, `engine.rs`): creates and sets of 100-byte
//! values with the open ACL, and deletes of any version, as `testkeeper bench` sends them.

use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{DeleteRequest, SetDataRequest};
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

/// The data of every create and set.
pub const VALUE: [u8; 100] = [7; 100];

pub fn create(path: &str) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(VALUE.to_vec()), acl: Acl::open(), flags: 0 };
    Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
}

pub fn set(path: &str) -> Request {
    Request::SetData(SetDataRequest { path: path.into(), data: Some(VALUE.to_vec()), version: -1 })
}

pub fn delete(path: &str) -> Request {
    Request::Delete(DeleteRequest { path: path.into(), version: -1 })
}
