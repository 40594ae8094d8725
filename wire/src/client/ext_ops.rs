//! Typed conveniences for the session, the watches, and ClickHouse Keeper's extension ops.

use super::error::{ClientError, LossReason};
use super::ops::{create_req, expect_body, unexpected};
use super::Client;
use crate::opcode::OpCode;
use crate::records::acl::Acl;
use crate::records::data::{CheckVersionRequest, DeleteRequest, PathRecord};
use crate::records::keeper_ext::{
    CheckStatRequest, ListRecursiveRequest, ListRequest, ListWithStatsAndDataResponse, RemoveRecursiveRequest,
};
use crate::records::session::{AuthPacket, ClientInfo};
use crate::records::stat::Stat;
use crate::records::watches::{AddWatchRequest, SetWatches, SetWatches2, WatchesRequest};
use crate::request::Request;
use crate::response::Response;

impl Client {
    /// auth (xid -4): adds an identity (`digest` with `user:password`, ...) to the session.
    ///
    /// # Errors
    /// `AuthFailed` (-115), after which real servers close the connection; connection loss.
    pub async fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<(), ClientError> {
        let req = Request::Auth(AuthPacket { auth_type: 0, scheme: scheme.into(), auth: auth.to_vec() });
        expect_body!(self, req, "auth", Response::Empty => ())
    }

    /// ping (xid -2), answered in order with the requests before it.
    ///
    /// # Errors
    /// Connection loss (an expired session shows up as the server closing the socket).
    pub async fn ping(&self) -> Result<(), ClientError> {
        expect_body!(self, Request::Ping, "ping", Response::Empty => ())
    }

    /// closeSession: waits for the reply, then ends the connection. Later calls fail with
    /// `ConnectionLoss(LossReason::Closed)`.
    ///
    /// ClickHouse Keeper closes the socket instead of answering; that also counts as closed
    /// (and [`loss_reason`](Self::loss_reason) is then `Eof`). Use `call(Request::Close)` to
    /// see exactly which a server did.
    ///
    /// # Errors
    /// A server error, or connection loss if the connection was already gone or died another
    /// way before the reply.
    pub async fn close(&self) -> Result<(), ClientError> {
        if self.is_closed() {
            return Err(self.shared.loss());
        }
        match self.expect(Request::Close).await {
            Ok(Response::Empty) | Err(ClientError::ConnectionLoss(LossReason::Eof)) => Ok(()),
            Ok(other) => Err(unexpected("closeSession", &other)),
            Err(e) => Err(e),
        }
    }

    /// whoAmI (107): the identities the session is authenticated as.
    ///
    /// # Errors
    /// `Unimplemented` on servers without it, connection loss.
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>, ClientError> {
        expect_body!(self, Request::WhoAmI, "whoAmI", Response::WhoAmI(info) => info)
    }

    /// getEphemerals (103): this session's ephemeral paths under `prefix`.
    ///
    /// # Errors
    /// Connection loss, or the server's refusal.
    pub async fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>, ClientError> {
        let req = Request::GetEphemerals(PathRecord { path: prefix.into() });
        expect_body!(self, req, "getEphemerals", Response::Paths(p) => p)
    }

    /// getAllChildrenNumber (104): the number of nodes below `path`, at any depth.
    ///
    /// # Errors
    /// `NoNode`, `NoAuth`, connection loss.
    pub async fn get_all_children_number(&self, path: &str) -> Result<i32, ClientError> {
        let req = Request::GetAllChildrenNumber(PathRecord { path: path.into() });
        expect_body!(self, req, "getAllChildrenNumber", Response::Number(n) => n)
    }

    /// addWatch (106); `mode` from `add_watch_mode` (0 persistent, 1 persistent-recursive).
    ///
    /// # Errors
    /// `NoAuth`, connection loss.
    pub async fn add_watch(&self, path: &str, mode: i32) -> Result<(), ClientError> {
        let req = Request::AddWatch(AddWatchRequest { path: path.into(), mode });
        // ZooKeeper's reply body is an `ErrorResponse` holding 0; tolerate an empty one too.
        expect_body!(self, req, "addWatch", Response::Number(_) | Response::Empty => ())
    }

    /// removeWatches (18); `watcher_type` from `watcher_type` (1 children, 2 data, 3 any).
    ///
    /// # Errors
    /// `NoWatcher` when there is none to remove, connection loss.
    pub async fn remove_watches(&self, path: &str, watcher_type: i32) -> Result<(), ClientError> {
        let req = Request::RemoveWatches(WatchesRequest { path: path.into(), watcher_type });
        expect_body!(self, req, "removeWatches", Response::Empty => ())
    }

    /// checkWatches (17): whether such a watch is set, without removing it.
    ///
    /// # Errors
    /// `NoWatcher` when there is none, connection loss.
    pub async fn check_watches(&self, path: &str, watcher_type: i32) -> Result<(), ClientError> {
        let req = Request::CheckWatches(WatchesRequest { path: path.into(), watcher_type });
        expect_body!(self, req, "checkWatches", Response::Empty => ())
    }

    /// setWatches (101, xid -8): re-registers watches, firing those whose node changed after
    /// `relative_zxid`.
    ///
    /// # Errors
    /// Connection loss, or the server's refusal.
    pub async fn set_watches(&self, watches: SetWatches) -> Result<(), ClientError> {
        expect_body!(self, Request::SetWatches(watches), "setWatches", Response::Empty => ())
    }

    /// setWatches2 (105, xid -8): as `set_watches`, plus persistent watches.
    ///
    /// # Errors
    /// Connection loss, or the server's refusal.
    pub async fn set_watches2(&self, watches: SetWatches2) -> Result<(), ClientError> {
        expect_body!(self, Request::SetWatches2(watches), "setWatches2", Response::Empty => ())
    }

    /// Keeper filteredList (500): children of one kind (`list_type`: 0 all, 1 persistent,
    /// 2 ephemeral) and the parent's stat.
    ///
    /// # Errors
    /// `NoNode`, `Unimplemented` on ZooKeeper, connection loss.
    pub async fn filtered_list(
        &self,
        path: &str,
        list_type: u8,
        watch: bool,
    ) -> Result<(Vec<String>, Stat), ClientError> {
        let req = Request::FilteredList(ListRequest { path: path.into(), watch, list_type, ..Default::default() });
        expect_body!(self, req, "filteredList", Response::Children2 { children, stat } => (children, stat))
    }

    /// Keeper filteredListWithStatsAndData (506): as `filtered_list`, plus each child's stat
    /// and data when asked.
    ///
    /// # Errors
    /// `NoNode`, `Unimplemented` on ZooKeeper and older Keepers, connection loss.
    pub async fn filtered_list_with_stats_and_data(
        &self,
        path: &str,
        list_type: u8,
        with_stat: bool,
        with_data: bool,
    ) -> Result<ListWithStatsAndDataResponse, ClientError> {
        let req = ListRequest { path: path.into(), watch: false, list_type, with_stat, with_data };
        let req = Request::FilteredListWithStatsAndData(req);
        expect_body!(self, req, "filteredListWithStatsAndData", Response::ListWithStatsAndData(r) => r)
    }

    /// Keeper listRecursive (507): every path below `path`, at most `limit` of them.
    ///
    /// # Errors
    /// `NoNode`, `Unimplemented` on ZooKeeper, connection loss.
    pub async fn list_recursive(&self, path: &str, limit: u32) -> Result<Vec<String>, ClientError> {
        let req = Request::ListRecursive(ListRecursiveRequest { path: path.into(), limit });
        expect_body!(self, req, "listRecursive", Response::Paths(p) => p)
    }

    /// Keeper checkNotExists (501): succeeds when the node is absent (or, with a version other
    /// than -1, when its version differs).
    ///
    /// # Errors
    /// `NodeExists`, `Unimplemented` on ZooKeeper, connection loss.
    pub async fn check_not_exists(&self, path: &str, version: i32) -> Result<(), ClientError> {
        let req = Request::CheckNotExists(CheckVersionRequest { path: path.into(), version });
        expect_body!(self, req, "checkNotExists", Response::Empty => ())
    }

    /// Keeper createIfNotExists (502): creates, or succeeds without change when the node exists.
    ///
    /// # Errors
    /// `NoNode` for a missing parent, `Unimplemented` on ZooKeeper, connection loss.
    pub async fn create_if_not_exists(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        flags: i32,
    ) -> Result<String, ClientError> {
        let req = create_req(OpCode::CreateIfNotExists, path, data, acl, flags, 0);
        expect_body!(self, req, "createIfNotExists", Response::Create(p) => p)
    }

    /// Keeper removeRecursive (503): deletes a subtree of at most `limit` nodes.
    ///
    /// # Errors
    /// `NoNode`, `NotEmpty` when the subtree is over the limit, connection loss.
    pub async fn remove_recursive(&self, path: &str, limit: u32) -> Result<(), ClientError> {
        let req = Request::RemoveRecursive(RemoveRecursiveRequest { path: path.into(), limit });
        expect_body!(self, req, "removeRecursive", Response::Empty => ())
    }

    /// Keeper tryRemove (505): a delete that succeeds when the node is already absent.
    ///
    /// # Errors
    /// `BadVersion`, `NotEmpty`, `Unimplemented` on ZooKeeper, connection loss.
    pub async fn try_remove(&self, path: &str, version: i32) -> Result<(), ClientError> {
        let req = Request::TryRemove(DeleteRequest { path: path.into(), version });
        expect_body!(self, req, "tryRemove", Response::Empty => ())
    }

    /// Keeper checkStat (504): every field of `stat` (and `version`) that is not -1 must match.
    ///
    /// # Errors
    /// `NoNode`, `BadVersion`, `Unimplemented` on ZooKeeper, connection loss.
    pub async fn check_stat(&self, path: &str, version: i32, stat: Stat) -> Result<(), ClientError> {
        let req = Request::CheckStat(CheckStatRequest { path: path.into(), version, stat });
        expect_body!(self, req, "checkStat", Response::Empty => ())
    }
}
