//! The operations a scenario step can send, their one-line text form (used in transcripts and
//! reproductions) and their translation into wire requests.
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
use testkeeper_wire::records::keeper_ext::{ListRequest, RemoveRecursiveRequest};
use testkeeper_wire::records::session::AuthPacket;
use testkeeper_wire::records::watches::{AddWatchRequest, SetWatches, WatchesRequest};
use testkeeper_wire::{perms, Acl, CreateOp, OpCode, Request};

/// Which ACL a create or setACL carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclKind {
    /// `world:anyone` all permissions.
    Open,
    /// `world:anyone` read only.
    ReadOnly,
    /// `auth:` all permissions: the creator's authenticated ids (INVALIDACL without any).
    Creator,
    /// `world:nobody`: a world id other than `anyone` is invalid in both servers.
    BadWorld,
}

impl AclKind {
    fn acl(self) -> Vec<Acl> {
        match self {
            AclKind::Open => Acl::open(),
            AclKind::ReadOnly => Acl::read_only(),
            AclKind::Creator => vec![Acl::new(perms::ALL, "auth", "")],
            AclKind::BadWorld => vec![Acl::new(perms::ALL, "world", "nobody")],
        }
    }

    fn name(self) -> &'static str {
        match self {
            AclKind::Open => "open",
            AclKind::ReadOnly => "read-only",
            AclKind::Creator => "creator",
            AclKind::BadWorld => "world:nobody",
        }
    }
}

/// One request of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Create {
        path: String,
        data: String,
        flags: i32,
        acl: AclKind,
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
        acl: AclKind,
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
    /// createContainer (19), createTTL (21) or Keeper's createIfNotExists (502).
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
    /// Keeper's checkNotExists (501), tryRemove (505), removeRecursive (503), filteredList (500).
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
            Op::CheckNotExists { .. } | Op::TryRemove { .. } | Op::RemoveRecursive { .. } => true,
            Op::FilteredList { .. } => true,
            Op::Multi(ops) | Op::MultiRead(ops) => ops.iter().any(Op::keeper_only),
            _ => false,
        }
    }

    /// The wire request, with `~` replaced by `base`.
    pub fn request(&self, base: &str) -> Request {
        let p = |path: &str| resolve(path, base);
        match self {
            Op::Create { path, data, flags, acl } => Request::Create(CreateOp {
                op: OpCode::Create,
                req: CreateRequest {
                    path: p(path),
                    data: Some(data.clone().into_bytes()),
                    acl: acl.acl(),
                    flags: *flags,
                },
                ttl: 0,
            }),
            Op::Delete { path, version } => Request::Delete(DeleteRequest { path: p(path), version: *version }),
            Op::Exists { path, watch } => Request::Exists(ExistsRequest { path: p(path), watch: *watch }),
            Op::Get { path, watch } => Request::GetData(GetDataRequest { path: p(path), watch: *watch }),
            Op::Set { path, data, version } => Request::SetData(SetDataRequest {
                path: p(path),
                data: Some(data.clone().into_bytes()),
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
            Op::CreateAs { op, path, data, flags, ttl } => Request::Create(CreateOp {
                op: *op,
                req: CreateRequest {
                    path: p(path),
                    data: Some(data.clone().into_bytes()),
                    acl: Acl::open(),
                    flags: *flags,
                },
                ttl: *ttl,
            }),
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
            Op::CheckNotExists { path } => Request::CheckNotExists(CheckVersionRequest { path: p(path), version: -1 }),
            Op::TryRemove { path, version } => Request::TryRemove(DeleteRequest { path: p(path), version: *version }),
            Op::RemoveRecursive { path, limit } => {
                Request::RemoveRecursive(RemoveRecursiveRequest { path: p(path), limit: *limit })
            }
            Op::FilteredList { path, list_type } => {
                Request::FilteredList(ListRequest { path: p(path), list_type: *list_type, ..Default::default() })
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
                if *acl != AclKind::Open {
                    write!(f, " acl={}", acl.name())?;
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
            Op::SetAcl { path, acl, version } => write!(f, "setAcl {path} {} v={version}", acl.name()),
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
            Op::CheckNotExists { path } => write!(f, "checkNotExists {path}"),
            Op::TryRemove { path, version } => write!(f, "tryRemove {path} v={version}"),
            Op::RemoveRecursive { path, limit } => write!(f, "removeRecursive {path} limit={limit}"),
            Op::FilteredList { path, list_type } => write!(f, "filteredList {path} type={list_type}"),
        }
    }
}
