//! The operations a scenario step can send, their one-line text form (the scenario files'
//! syntax, and the `op` of every transcript line; `parse` reads it back) and their
//! translation into wire requests.
//!
//! Paths in scenarios start with `~` for "this scenario's own subtree" (resolved against
//! `--root` at run time) or `/` for an absolute path (system nodes only): keeping the random
//! root out of the text is what lets two servers' transcripts compare.

use testkeeper_wire::records::acl::{GetAclRequest, SetAclRequest};
use testkeeper_wire::records::children::GetChildrenRequest;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{
    CheckVersionRequest, DeleteRequest, ExistsRequest, GetDataRequest, PathRecord, SetDataRequest,
};
use testkeeper_wire::records::keeper_ext::{
    CheckStatRequest, ListRecursiveRequest, ListRequest, RemoveRecursiveRequest,
};
use testkeeper_wire::records::session::AuthPacket;
use testkeeper_wire::records::watches::{AddWatchRequest, SetWatches, WatchesRequest};
use testkeeper_wire::{Acl, CreateOp, OpCode, Request, Stat};

pub use crate::acl_spec::AclSpec;

/// One request of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Create {
        path: String,
        data: String,
        flags: i32,
        acl: AclSpec,
    },
    Delete {
        path: String,
        version: i32,
    },
    Exists {
        path: String,
        watch: bool,
    },
    Get {
        path: String,
        watch: bool,
    },
    Set {
        path: String,
        data: String,
        version: i32,
    },
    Children {
        path: String,
        watch: bool,
    },
    Children2 {
        path: String,
        watch: bool,
    },
    GetAcl {
        path: String,
    },
    SetAcl {
        path: String,
        acl: AclSpec,
        version: i32,
    },
    Sync {
        path: String,
    },
    Check {
        path: String,
        version: i32,
    },
    Multi(Vec<Op>),
    MultiRead(Vec<Op>),
    Auth {
        scheme: String,
        auth: String,
    },
    /// addWatch: mode 0 persistent, 1 persistent recursive.
    AddWatch {
        path: String,
        mode: i32,
    },
    /// create2 (15), createContainer (19), createTTL (21) or Keeper's createIfNotExists (502).
    CreateAs {
        op: OpCode,
        path: String,
        data: String,
        flags: i32,
        ttl: i64,
    },
    /// setWatches (101) as a reconnecting client sends it. `since_start` sends relative zxid
    /// 0 (every watched change "happened since"), else `i64::MAX` (nothing did): both keep
    /// the real zxid out of the scenario text.
    SetWatches {
        since_start: bool,
        data: Vec<String>,
        exist: Vec<String>,
        child: Vec<String>,
    },
    /// checkWatches (17) / removeWatches (18); `kind` 1 children, 2 data, 3 any.
    CheckWatches {
        path: String,
        kind: i32,
    },
    RemoveWatches {
        path: String,
        kind: i32,
    },
    /// ZooKeeper 3.6+ only: getEphemerals (103), getAllChildrenNumber (104), whoAmI (107).
    GetEphemerals {
        path: String,
    },
    GetAllChildrenNumber {
        path: String,
    },
    WhoAmI,
    /// Keeper's checkNotExists (501), tryRemove (505), removeRecursive (503), filteredList
    /// (500), checkStat (504, version only), listRecursive (507).
    CheckNotExists {
        path: String,
    },
    TryRemove {
        path: String,
        version: i32,
    },
    RemoveRecursive {
        path: String,
        limit: u32,
    },
    FilteredList {
        path: String,
        list_type: u8,
    },
    CheckStat {
        path: String,
        version: i32,
    },
    ListRecursive {
        path: String,
        limit: u32,
    },
}

impl Op {
    /// Whether the op can change the tree (read-only runs skip scenarios that contain one).
    pub fn writes(&self) -> bool {
        match self {
            Op::Create { .. }
            | Op::Delete { .. }
            | Op::Set { .. }
            | Op::SetAcl { .. }
            | Op::Multi(_)
            | Op::CreateAs { .. }
            | Op::TryRemove { .. }
            | Op::RemoveRecursive { .. } => true,
            Op::MultiRead(ops) => ops.iter().any(Op::writes),
            _ => false,
        }
    }

    /// Whether the op exists only in ClickHouse Keeper (opcodes 500+): scenarios using one run
    /// only when the target and the reference are both Keeper-flavored.
    pub fn keeper_only(&self) -> bool {
        match self {
            Op::CreateAs { op, .. } => *op == OpCode::CreateIfNotExists,
            Op::CheckNotExists { .. }
            | Op::TryRemove { .. }
            | Op::RemoveRecursive { .. }
            | Op::FilteredList { .. }
            | Op::CheckStat { .. }
            | Op::ListRecursive { .. } => true,
            Op::Multi(ops) | Op::MultiRead(ops) => ops.iter().any(Op::keeper_only),
            _ => false,
        }
    }

    /// The paths the op names, as written (`~/...` or absolute).
    pub fn paths(&self) -> Vec<&str> {
        match self {
            Op::Multi(ops) | Op::MultiRead(ops) => ops.iter().flat_map(Op::paths).collect(),
            Op::SetWatches { data, exist, child, .. } => {
                data.iter().chain(exist).chain(child).map(String::as_str).collect()
            }
            Op::Auth { .. } | Op::WhoAmI => Vec::new(),
            other => vec![other.path_text()],
        }
    }

    fn path_text(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::Delete { path, .. }
            | Op::Exists { path, .. }
            | Op::Get { path, .. }
            | Op::Set { path, .. }
            | Op::Children { path, .. }
            | Op::Children2 { path, .. }
            | Op::GetAcl { path }
            | Op::SetAcl { path, .. }
            | Op::Sync { path }
            | Op::Check { path, .. }
            | Op::AddWatch { path, .. }
            | Op::CreateAs { path, .. }
            | Op::CheckWatches { path, .. }
            | Op::RemoveWatches { path, .. }
            | Op::GetEphemerals { path }
            | Op::GetAllChildrenNumber { path }
            | Op::CheckNotExists { path }
            | Op::TryRemove { path, .. }
            | Op::RemoveRecursive { path, .. }
            | Op::FilteredList { path, .. }
            | Op::CheckStat { path, .. }
            | Op::ListRecursive { path, .. } => path,
            _ => "",
        }
    }

    /// The wire request, with `~` replaced by `base`.
    pub fn request(&self, base: &str) -> Request {
        let p = |path: &str| resolve(path, base);
        let create = |op, path: &str, data: &str, flags, acl: Vec<Acl>, ttl| {
            Request::Create(CreateOp {
                op,
                req: CreateRequest { path: p(path), data: Some(data.as_bytes().to_vec()), acl, flags },
                ttl,
            })
        };
        match self {
            Op::Create { path, data, flags, acl } => create(OpCode::Create, path, data, *flags, acl.acl(), 0),
            Op::CreateAs { op, path, data, flags, ttl } => create(*op, path, data, *flags, Acl::open(), *ttl),
            Op::Delete { path, version } => Request::Delete(DeleteRequest { path: p(path), version: *version }),
            Op::Exists { path, watch } => Request::Exists(ExistsRequest { path: p(path), watch: *watch }),
            Op::Get { path, watch } => Request::GetData(GetDataRequest { path: p(path), watch: *watch }),
            Op::Set { path, data, version } => Request::SetData(SetDataRequest {
                path: p(path),
                data: Some(data.as_bytes().to_vec()),
                version: *version,
            }),
            Op::Children { path, watch } => Request::GetChildren(GetChildrenRequest { path: p(path), watch: *watch }),
            Op::Children2 { path, watch } => Request::GetChildren2(GetChildrenRequest { path: p(path), watch: *watch }),
            Op::GetAcl { path } => Request::GetAcl(GetAclRequest { path: p(path) }),
            Op::SetAcl { path, acl, version } => {
                Request::SetAcl(SetAclRequest { path: p(path), acl: acl.acl(), version: *version })
            }
            Op::Sync { path } => Request::Sync(PathRecord { path: p(path) }),
            Op::Check { path, version } => Request::Check(CheckVersionRequest { path: p(path), version: *version }),
            Op::Multi(ops) => Request::Multi(ops.iter().map(|o| o.request(base)).collect()),
            Op::MultiRead(ops) => Request::MultiRead(ops.iter().map(|o| o.request(base)).collect()),
            Op::Auth { scheme, auth } => {
                Request::Auth(AuthPacket { auth_type: 0, scheme: scheme.clone(), auth: auth.clone().into_bytes() })
            }
            Op::AddWatch { path, mode } => Request::AddWatch(AddWatchRequest { path: p(path), mode: *mode }),
            Op::SetWatches { since_start, data, exist, child } => {
                let all = |v: &[String]| v.iter().map(|x| p(x)).collect();
                Request::SetWatches(SetWatches {
                    relative_zxid: if *since_start { 0 } else { i64::MAX },
                    data_watches: all(data),
                    exist_watches: all(exist),
                    child_watches: all(child),
                })
            }
            Op::CheckWatches { path, kind } => {
                Request::CheckWatches(WatchesRequest { path: p(path), watcher_type: *kind })
            }
            Op::RemoveWatches { path, kind } => {
                Request::RemoveWatches(WatchesRequest { path: p(path), watcher_type: *kind })
            }
            Op::GetEphemerals { path } => Request::GetEphemerals(PathRecord { path: p(path) }),
            Op::GetAllChildrenNumber { path } => Request::GetAllChildrenNumber(PathRecord { path: p(path) }),
            Op::WhoAmI => Request::WhoAmI,
            Op::CheckNotExists { path } => Request::CheckNotExists(CheckVersionRequest { path: p(path), version: -1 }),
            Op::TryRemove { path, version } => Request::TryRemove(DeleteRequest { path: p(path), version: *version }),
            Op::RemoveRecursive { path, limit } => {
                Request::RemoveRecursive(RemoveRecursiveRequest { path: p(path), limit: *limit })
            }
            Op::FilteredList { path, list_type } => {
                Request::FilteredList(ListRequest { path: p(path), list_type: *list_type, ..Default::default() })
            }
            Op::CheckStat { path, version } => {
                // Every stat field -1 (unchecked) but the version: Keeper's "check" by stat.
                let any = Stat {
                    czxid: -1,
                    mzxid: -1,
                    ctime: -1,
                    mtime: -1,
                    version: *version,
                    cversion: -1,
                    aversion: -1,
                    ephemeral_owner: -1,
                    data_length: -1,
                    num_children: -1,
                    pzxid: -1,
                };
                Request::CheckStat(CheckStatRequest { path: p(path), version: *version, stat: any })
            }
            Op::ListRecursive { path, limit } => {
                Request::ListRecursive(ListRecursiveRequest { path: p(path), limit: *limit })
            }
        }
    }
}

/// `~` and `~/x` name the scenario's subtree; anything else is absolute.
pub fn resolve(path: &str, base: &str) -> String {
    match path.strip_prefix('~') {
        Some(rest) => format!("{base}{rest}"),
        None => path.to_string(),
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = |watch: &bool| if *watch { " watch" } else { "" };
        match self {
            Op::Create { path, data, flags, acl } => {
                write!(f, "create {path} {data:?} flags={flags}")?;
                if !acl.is_open() {
                    write!(f, " acl={acl}")?;
                }
                Ok(())
            }
            Op::Delete { path, version } => write!(f, "delete {path} v={version}"),
            Op::Exists { path, watch } => write!(f, "exists {path}{}", w(watch)),
            Op::Get { path, watch } => write!(f, "get {path}{}", w(watch)),
            Op::Set { path, data, version } => write!(f, "set {path} {data:?} v={version}"),
            Op::Children { path, watch } => write!(f, "children {path}{}", w(watch)),
            Op::Children2 { path, watch } => write!(f, "children2 {path}{}", w(watch)),
            Op::GetAcl { path } => write!(f, "getAcl {path}"),
            Op::SetAcl { path, acl, version } => write!(f, "setAcl {path} {acl} v={version}"),
            Op::Sync { path } => write!(f, "sync {path}"),
            Op::Check { path, version } => write!(f, "check {path} v={version}"),
            Op::Multi(ops) | Op::MultiRead(ops) => {
                let name = if matches!(self, Op::Multi(_)) { "multi" } else { "multiRead" };
                let parts: Vec<String> = ops.iter().map(Op::to_string).collect();
                write!(f, "{name} [{}]", parts.join("; "))
            }
            Op::Auth { scheme, auth } => write!(f, "addAuth {scheme} {auth:?}"),
            Op::AddWatch { path, mode } => write!(f, "addWatch {path} mode={mode}"),
            Op::CreateAs { op, path, data, flags, ttl } => {
                write!(f, "{} {path} {data:?} flags={flags}", op.name())?;
                if *ttl != 0 {
                    write!(f, " ttl={ttl}")?;
                }
                Ok(())
            }
            Op::SetWatches { since_start, data, exist, child } => {
                let zxid = if *since_start { "0" } else { "max" };
                write!(f, "setWatches zxid={zxid} data={data:?} exist={exist:?} child={child:?}")
            }
            Op::CheckWatches { path, kind } => write!(f, "checkWatches {path} type={kind}"),
            Op::RemoveWatches { path, kind } => write!(f, "removeWatches {path} type={kind}"),
            Op::GetEphemerals { path } => write!(f, "getEphemerals {path}"),
            Op::GetAllChildrenNumber { path } => write!(f, "getAllChildrenNumber {path}"),
            Op::WhoAmI => write!(f, "whoAmI"),
            Op::CheckNotExists { path } => write!(f, "checkNotExists {path}"),
            Op::TryRemove { path, version } => write!(f, "tryRemove {path} v={version}"),
            Op::RemoveRecursive { path, limit } => write!(f, "removeRecursive {path} limit={limit}"),
            Op::FilteredList { path, list_type } => write!(f, "filteredList {path} type={list_type}"),
            Op::CheckStat { path, version } => write!(f, "checkStat {path} v={version}"),
            Op::ListRecursive { path, limit } => write!(f, "listRecursive {path} limit={limit}"),
        }
    }
}
