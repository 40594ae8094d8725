//! Reads, answered from the committed tree. They never change state; watch registration is the
//! caller's business (it depends on the result, see `watches.rs`).

use std::collections::VecDeque;

use testkeeper_wire::records::keeper_ext::{list_type, Buffer, ListRequest, ListWithStatsAndDataResponse};
use testkeeper_wire::records::session::ClientInfo;
use testkeeper_wire::{perms, Acl, MultiResult, OpCode, Request, Response, ZkError};

use super::acl::{self, AuthId};
use super::path;
use super::state::State;
use super::tree::NodeRef;

mod borrowed;
pub use borrowed::Borrowed;

impl State {
    fn node(&self, p: &str) -> Result<NodeRef<'_>, ZkError> {
        // ZooKeeper's DataTree files the root under "" as well as "/" (measured: getData("")
        // answers the root); Keeper's storage knows only "/".
        let p = if p.is_empty() && self.rules.empty_path_is_root { "/" } else { p };
        self.tree.get(p).ok_or(ZkError::NoNode)
    }

    fn readable(&self, p: &str, auth: &[AuthId]) -> Result<NodeRef<'_>, ZkError> {
        let n = self.node(p)?;
        acl::check(n.acl(), auth, perms::READ)?;
        Ok(n)
    }

    /// Answers a read request for `session`.
    ///
    /// # Errors
    /// The ZooKeeper error the real server would return (NONODE, NOAUTH, BADARGUMENTS...).
    pub fn read(&self, req: &Request, auth: &[AuthId], session: i64) -> Result<Response, ZkError> {
        let hide = self.rules.hide_special_owners;
        Ok(match req {
            Request::Exists(r) => Response::Stat(self.node(&r.path)?.client_stat(hide)),
            Request::GetData(r) => {
                let n = self.readable(&r.path, auth)?;
                let data = if n.data_is_null() { None } else { Some(n.data().to_vec()) };
                Response::Data { data, stat: n.client_stat(hide) }
            }
            Request::GetAcl(r) => {
                let n = self.node(&r.path)?;
                acl::check(n.acl(), auth, perms::READ | perms::ADMIN)?;
                let mut list: Vec<Acl> = n.acl().to_vec();
                // ZooKeeper (ZOOKEEPER-1392) hides digest hashes from readers without ADMIN.
                if !acl::allowed(n.acl(), auth, perms::ADMIN) {
                    for a in list.iter_mut().filter(|a| a.id.scheme == "digest") {
                        let user = a.id.id.split(':').next().unwrap_or_default().to_string();
                        a.id.id = format!("{user}:x");
                    }
                }
                Response::Acl { acl: list, stat: n.client_stat(hide) }
            }
            Request::GetChildren(r) => Response::Children(self.names(self.readable(&r.path, auth)?)),
            Request::GetChildren2(r) => {
                let n = self.readable(&r.path, auth)?;
                Response::Children2 { children: self.names(n), stat: n.client_stat(hide) }
            }
            Request::GetAllChildrenNumber(r) => {
                self.readable(&r.path, auth)?;
                Response::Number(self.count_descendants(&r.path) as i32)
            }
            Request::GetEphemerals(r) => {
                let prefix = r.path.trim();
                let all = prefix.is_empty() || prefix == "/";
                Response::Paths(
                    self.tree
                        .ephemerals_of(session)
                        .filter(|p| all || p.starts_with(prefix))
                        .map(str::to_string)
                        .collect(),
                )
            }
            // The user of a digest identity is its name, without the hash (ZooKeeper's
            // DigestAuthenticationProvider.getUserName; measured).
            Request::WhoAmI => Response::WhoAmI(
                auth.iter()
                    .map(|a| {
                        let user = match a.scheme.as_str() {
                            "digest" => a.id.split(':').next().unwrap_or_default().to_string(),
                            _ => a.id.clone(),
                        };
                        ClientInfo { auth_scheme: a.scheme.clone(), user }
                    })
                    .collect(),
            ),
            Request::Sync(r) => Response::Path(r.path.clone()),
            Request::FilteredList(r) => {
                let (n, kids) = self.filtered(r, auth)?;
                Response::Children2 {
                    children: kids.into_iter().map(|(name, _)| name).collect(),
                    stat: n.client_stat(hide),
                }
            }
            Request::FilteredListWithStatsAndData(r) => {
                let (n, kids) = self.filtered(r, auth)?;
                let mut resp = ListWithStatsAndDataResponse { stat: n.client_stat(hide), ..Default::default() };
                for (name, child) in kids {
                    if r.with_stat {
                        resp.stats.push(child.client_stat(hide));
                    }
                    if r.with_data {
                        resp.data.push(Buffer(child.data().to_vec()));
                    }
                    resp.names.push(name);
                }
                Response::ListWithStatsAndData(resp)
            }
            Request::ListRecursive(r) => {
                self.readable(&r.path, auth)?;
                Response::Paths(self.list_recursive(&r.path, r.limit as usize, auth))
            }
            Request::MultiRead(ops) => {
                Response::Multi(ops.iter().map(|op| self.multi_read_one(op, auth, session)).collect())
            }
            _ => return Err(ZkError::BadArguments),
        })
    }

    fn multi_read_one(&self, op: &Request, auth: &[AuthId], session: i64) -> MultiResult {
        let allowed = matches!(
            op,
            Request::GetData(_)
                | Request::GetChildren(_)
                | Request::GetChildren2(_)
                | Request::Exists(_)
                | Request::FilteredList(_)
                | Request::FilteredListWithStatsAndData(_)
                | Request::ListRecursive(_)
        );
        let result = if allowed { self.read(op, auth, session) } else { Err(ZkError::BadArguments) };
        // Keeper answers a filtered list with its plain list response class.
        let header_op = match op.op() {
            OpCode::FilteredList => OpCode::GetChildren2,
            other => other,
        };
        match result {
            Ok(resp) => MultiResult::Ok(header_op, resp),
            Err(e) if self.rules.multi_read_error_keeps_type => MultiResult::OpError(header_op, e.code()),
            Err(e) => MultiResult::Error(e.code()),
        }
    }

    /// Keeper's filtered listing: with a filter, every child must be readable (else NOAUTH),
    /// then ephemerals or persistents are dropped.
    fn filtered(&self, r: &ListRequest, auth: &[AuthId]) -> Result<Listing<'_>, ZkError> {
        let n = self.readable(&r.path, auth)?;
        let simple = r.list_type == list_type::ALL && !r.with_stat && !r.with_data;
        let mut out = Vec::with_capacity(n.num_children());
        for child in n.children_unordered() {
            if !simple {
                acl::check(child.acl(), auth, perms::READ)?;
            }
            let keep = match r.list_type {
                list_type::PERSISTENT_ONLY => !child.is_ephemeral(),
                list_type::EPHEMERAL_ONLY => child.is_ephemeral(),
                _ => true,
            };
            if keep {
                out.push((child.name().to_string(), child));
            }
        }
        Ok((n, out))
    }

    fn count_descendants(&self, p: &str) -> usize {
        let mut count = 0;
        let mut stack: Vec<NodeRef<'_>> = self.tree.get(p).into_iter().collect();
        while let Some(n) = stack.pop() {
            count += n.num_children();
            stack.extend(n.children_unordered());
        }
        count
    }

    /// Breadth-first descendants as absolute paths, skipping unreadable subtrees, at most `limit`.
    fn list_recursive(&self, root: &str, limit: usize, auth: &[AuthId]) -> Vec<String> {
        let mut out = Vec::new();
        let mut queue = VecDeque::from([root.to_string()]);
        while let Some(cur) = queue.pop_front() {
            let Some(n) = self.tree.get(&cur) else { continue };
            for c in n.children() {
                let child = path::join(&cur, c.name());
                if !acl::allowed(c.acl(), auth, perms::READ) {
                    continue;
                }
                if out.len() >= limit {
                    return out;
                }
                out.push(child.clone());
                queue.push_back(child);
            }
        }
        out
    }
}

/// A listed node and the children that passed the filter, by name.
type Listing<'a> = (NodeRef<'a>, Vec<(String, NodeRef<'a>)>);

impl State {
    /// The names of `n`'s children, in the tree's table order: arbitrary, as in ZooKeeper (a Java
    /// `HashSet`) and Keeper (a hash set), and the same for the same history. Sorting a 256-child
    /// listing cost more than the rest of the request (docs/flavors.md).
    fn names(&self, n: NodeRef<'_>) -> Vec<String> {
        n.children_unordered().map(|c| c.name().to_string()).collect()
    }
}
