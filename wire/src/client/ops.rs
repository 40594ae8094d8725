//! Typed conveniences for the tree operations: create, read, write, delete, ACLs, multi.
//!
//! Each builds a `Request`, goes through [`Client::call`], and unpacks the reply body it
//! expects. A server error comes back as `ClientError::Zk` (or `UnknownCode`); use `call`
//! directly to see the reply's zxid and raw bytes.

use super::error::ClientError;
use super::Client;
use crate::opcode::OpCode;
use crate::records::acl::{Acl, GetAclRequest, SetAclRequest};
use crate::records::children::GetChildrenRequest;
use crate::records::create::{create_mode, CreateRequest};
use crate::records::data::{
    CheckVersionRequest, DeleteRequest, ExistsRequest, GetDataRequest, PathRecord, SetDataRequest,
};
use crate::records::stat::Stat;
use crate::request::{CreateOp, Request};
use crate::response::{MultiResult, Response};
use crate::ZkError;

/// Unpacks the reply body a typed method expects, or reports the shape it got instead.
macro_rules! expect_body {
    ($client:expr, $req:expr, $op:literal, $pat:pat => $out:expr) => {
        match $client.expect($req).await? {
            $pat => Ok($out),
            other => Err(unexpected($op, &other)),
        }
    };
}
pub(super) use expect_body;

/// The error for a reply body of the wrong shape.
pub(super) fn unexpected(op: &'static str, body: &Response) -> ClientError {
    ClientError::UnexpectedBody { op, body: format!("{body:?}") }
}

/// A create request of any flavor.
pub(super) fn create_req(op: OpCode, path: &str, data: &[u8], acl: &[Acl], flags: i32, ttl: i64) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: acl.to_vec(), flags };
    Request::Create(CreateOp { op, req, ttl })
}

impl Client {
    /// `call`, with a server error turned into `Err`.
    pub(super) async fn expect(&self, req: Request) -> Result<Response, ClientError> {
        self.call(req).await?.into_response()
    }

    /// create (1): returns the path created, with any sequential suffix.
    ///
    /// # Errors
    /// Server errors (`NodeExists`, `NoNode`, `NoChildrenForEphemerals`...) and connection loss.
    pub async fn create(&self, path: &str, data: &[u8], acl: &[Acl], flags: i32) -> Result<String, ClientError> {
        let req = create_req(OpCode::Create, path, data, acl, flags, 0);
        expect_body!(self, req, "create", Response::Create(p) => p)
    }

    /// create2 (15): the path created and the new node's stat.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub async fn create2(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        flags: i32,
    ) -> Result<(String, Stat), ClientError> {
        let req = create_req(OpCode::Create2, path, data, acl, flags, 0);
        expect_body!(self, req, "create2", Response::Create2 { path, stat } => (path, stat))
    }

    /// createTTL (21); `flags` should be one of the `*_WITH_TTL` modes.
    ///
    /// # Errors
    /// As [`create`](Self::create); servers without TTL nodes answer `Unimplemented`.
    pub async fn create_ttl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        flags: i32,
        ttl_ms: i64,
    ) -> Result<(String, Stat), ClientError> {
        let req = create_req(OpCode::CreateTtl, path, data, acl, flags, ttl_ms);
        expect_body!(self, req, "createTTL", Response::Create2 { path, stat } => (path, stat))
    }

    /// createContainer (19), with the container mode.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub async fn create_container(&self, path: &str, data: &[u8], acl: &[Acl]) -> Result<(String, Stat), ClientError> {
        let req = create_req(OpCode::CreateContainer, path, data, acl, create_mode::CONTAINER, 0);
        expect_body!(self, req, "createContainer", Response::Create2 { path, stat } => (path, stat))
    }

    /// delete (2); `version` -1 matches any.
    ///
    /// # Errors
    /// `NoNode`, `BadVersion`, `NotEmpty`, `NoAuth`, connection loss.
    pub async fn delete(&self, path: &str, version: i32) -> Result<(), ClientError> {
        let req = Request::Delete(DeleteRequest { path: path.into(), version });
        expect_body!(self, req, "delete", Response::Empty => ())
    }

    /// exists (3): `None` when the node is absent (the server's `NoNode`), which still sets
    /// a watch when asked.
    ///
    /// # Errors
    /// Server errors other than `NoNode`, connection loss.
    pub async fn exists(&self, path: &str, watch: bool) -> Result<Option<Stat>, ClientError> {
        match self.expect(Request::Exists(ExistsRequest { path: path.into(), watch })).await {
            Ok(Response::Stat(stat)) => Ok(Some(stat)),
            Ok(other) => Err(unexpected("exists", &other)),
            Err(ClientError::Zk(ZkError::NoNode)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// getData (4): the data and stat.
    ///
    /// # Errors
    /// `NoNode`, `NoAuth`, connection loss.
    pub async fn get_data(&self, path: &str, watch: bool) -> Result<(Vec<u8>, Stat), ClientError> {
        let req = Request::GetData(GetDataRequest { path: path.into(), watch });
        expect_body!(self, req, "getData", Response::Data { data, stat } => (data.unwrap_or_default(), stat))
    }

    /// setData (5): the stat after the write; `version` -1 matches any.
    ///
    /// # Errors
    /// `NoNode`, `BadVersion`, `NoAuth`, connection loss.
    pub async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat, ClientError> {
        let req = Request::SetData(SetDataRequest { path: path.into(), data: Some(data.to_vec()), version });
        expect_body!(self, req, "setData", Response::Stat(s) => s)
    }

    /// getACL (6): the ACL and stat.
    ///
    /// # Errors
    /// `NoNode`, connection loss.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat), ClientError> {
        let req = Request::GetAcl(GetAclRequest { path: path.into() });
        expect_body!(self, req, "getACL", Response::Acl { acl, stat } => (acl, stat))
    }

    /// setACL (7): the stat after the change; `version` is the ACL version (`aversion`).
    ///
    /// # Errors
    /// `NoNode`, `BadVersion`, `InvalidAcl`, `NoAuth`, connection loss.
    pub async fn set_acl(&self, path: &str, acl: &[Acl], version: i32) -> Result<Stat, ClientError> {
        let req = Request::SetAcl(SetAclRequest { path: path.into(), acl: acl.to_vec(), version });
        expect_body!(self, req, "setACL", Response::Stat(s) => s)
    }

    /// getChildren (8): child names, in the server's order.
    ///
    /// # Errors
    /// `NoNode`, `NoAuth`, connection loss.
    pub async fn get_children(&self, path: &str, watch: bool) -> Result<Vec<String>, ClientError> {
        let req = Request::GetChildren(GetChildrenRequest { path: path.into(), watch });
        expect_body!(self, req, "getChildren", Response::Children(c) => c)
    }

    /// getChildren2 (12): child names and the parent's stat.
    ///
    /// # Errors
    /// `NoNode`, `NoAuth`, connection loss.
    pub async fn get_children2(&self, path: &str, watch: bool) -> Result<(Vec<String>, Stat), ClientError> {
        let req = Request::GetChildren2(GetChildrenRequest { path: path.into(), watch });
        expect_body!(self, req, "getChildren2", Response::Children2 { children, stat } => (children, stat))
    }

    /// sync (9): the path the server echoes back.
    ///
    /// # Errors
    /// Connection loss, or whatever the server refuses.
    pub async fn sync(&self, path: &str) -> Result<String, ClientError> {
        let req = Request::Sync(PathRecord { path: path.into() });
        expect_body!(self, req, "sync", Response::Path(p) => p)
    }

    /// check (13) on its own, outside a multi (ZooKeeper 3.9+ and Keeper accept it).
    ///
    /// # Errors
    /// `NoNode`, `BadVersion`, `Unimplemented` on older servers, connection loss.
    pub async fn check(&self, path: &str, version: i32) -> Result<(), ClientError> {
        let req = Request::Check(CheckVersionRequest { path: path.into(), version });
        expect_body!(self, req, "check", Response::Empty => ())
    }

    /// multi (14): one result per op. A failed multi usually still has header error 0, with
    /// the failure inside the results; `Err` only when the header itself carries an error.
    ///
    /// # Errors
    /// A header-level server error, connection loss.
    pub async fn multi(&self, ops: Vec<Request>) -> Result<Vec<MultiResult>, ClientError> {
        expect_body!(self, Request::Multi(ops), "multi", Response::Multi(r) => r)
    }

    /// multiRead (22): one result per read; each may fail on its own.
    ///
    /// # Errors
    /// A header-level server error, connection loss.
    pub async fn multi_read(&self, ops: Vec<Request>) -> Result<Vec<MultiResult>, ClientError> {
        expect_body!(self, Request::MultiRead(ops), "multiRead", Response::Multi(r) => r)
    }
}
