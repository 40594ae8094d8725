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
use testkeeper_wire::records::session::AuthPacket;
use testkeeper_wire::records::watches::AddWatchRequest;
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
}

impl Op {
    /// Whether the op can change the tree (read-only runs skip scenarios that contain one).
    pub fn writes(&self) -> bool {
        match self {
            Op::Create { .. } | Op::Delete { .. } | Op::Set { .. } | Op::SetAcl { .. } | Op::Multi(_) => true,
            Op::MultiRead(ops) => ops.iter().any(Op::writes),
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
        }
    }
}
