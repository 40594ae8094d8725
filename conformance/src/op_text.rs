//! A wire request in the catalogue's text form (`getData /a` is `get /a`), so the proxy's
//! reports and recordings read like the scenario files and the known-differences table's op
//! names apply to them. The reverse of [`Op::request`]; what `Op` cannot say (null data, a
//! setWatches2, reconfig) gets a plain description.

use testkeeper_wire::{perms, Acl, OpCode, Request};

use crate::ops::{AclSpec, Op};

/// `request` as an [`Op`], when it has one.
pub fn op_of(request: &Request) -> Option<Op> {
    let text = |d: &Option<Vec<u8>>| d.as_deref().map(String::from_utf8_lossy).unwrap_or_default().into_owned();
    Some(match request {
        Request::Create(c) if c.op == OpCode::Create => Op::Create {
            path: c.req.path.clone(),
            data: text(&c.req.data),
            flags: c.req.flags,
            acl: acl_spec(&c.req.acl),
        },
        Request::Create(c) => {
            Op::CreateAs { op: c.op, path: c.req.path.clone(), data: text(&c.req.data), flags: c.req.flags, ttl: c.ttl }
        }
        Request::Delete(r) => Op::Delete { path: r.path.clone(), version: r.version },
        Request::Exists(r) => Op::Exists { path: r.path.clone(), watch: r.watch },
        Request::GetData(r) => Op::Get { path: r.path.clone(), watch: r.watch },
        Request::SetData(r) => Op::Set { path: r.path.clone(), data: text(&r.data), version: r.version },
        Request::GetAcl(r) => Op::GetAcl { path: r.path.clone() },
        Request::SetAcl(r) => Op::SetAcl { path: r.path.clone(), acl: acl_spec(&r.acl), version: r.version },
        Request::GetChildren(r) => Op::Children { path: r.path.clone(), watch: r.watch },
        Request::GetChildren2(r) => Op::Children2 { path: r.path.clone(), watch: r.watch },
        Request::Sync(r) => Op::Sync { path: r.path.clone() },
        Request::Check(r) => Op::Check { path: r.path.clone(), version: r.version },
        Request::Multi(ops) => Op::Multi(ops.iter().map(op_of).collect::<Option<_>>()?),
        Request::MultiRead(ops) => Op::MultiRead(ops.iter().map(op_of).collect::<Option<_>>()?),
        Request::Auth(a) => Op::Auth { scheme: a.scheme.clone(), auth: String::from_utf8_lossy(&a.auth).into_owned() },
        Request::AddWatch(r) => Op::AddWatch { path: r.path.clone(), mode: r.mode },
        Request::CheckWatches(r) => Op::CheckWatches { path: r.path.clone(), kind: r.watcher_type },
        Request::RemoveWatches(r) => Op::RemoveWatches { path: r.path.clone(), kind: r.watcher_type },
        Request::GetEphemerals(r) => Op::GetEphemerals { path: r.path.clone() },
        Request::GetAllChildrenNumber(r) => Op::GetAllChildrenNumber { path: r.path.clone() },
        Request::WhoAmI => Op::WhoAmI,
        Request::CheckNotExists(r) => Op::CheckNotExists { path: r.path.clone() },
        Request::TryRemove(r) => Op::TryRemove { path: r.path.clone(), version: r.version },
        Request::RemoveRecursive(r) => Op::RemoveRecursive { path: r.path.clone(), limit: r.limit },
        Request::FilteredList(r) => Op::FilteredList { path: r.path.clone(), list_type: r.list_type },
        Request::CheckStat(r) => Op::CheckStat { path: r.path.clone(), version: r.version },
        Request::ListRecursive(r) => Op::ListRecursive { path: r.path.clone(), limit: r.limit },
        _ => return None,
    })
}

/// The request's text form: the op's, or the opcode's name and path.
pub fn describe(request: &Request) -> String {
    match op_of(request) {
        Some(op) => op.to_string(),
        None => match request.path() {
            Some(p) => format!("{} {p}", request.op().name()),
            None => request.op().name().to_string(),
        },
    }
}

/// Whether the op changes the tree when it succeeds (its reply's zxid is that change's).
pub fn is_write(request: &Request) -> bool {
    match request {
        Request::Multi(ops) => ops.iter().any(is_write),
        Request::Check(_) | Request::CheckNotExists(_) | Request::CheckStat(_) => false,
        r => r.op().is_write() && r.op() != OpCode::CloseSession,
    }
}

fn acl_spec(acl: &[Acl]) -> AclSpec {
    if acl == Acl::open().as_slice() {
        return AclSpec::Open;
    }
    if acl.is_empty() {
        return AclSpec::Empty;
    }
    let letters = |p: i32| {
        [(perms::CREATE, 'c'), (perms::DELETE, 'd'), (perms::READ, 'r'), (perms::WRITE, 'w'), (perms::ADMIN, 'a')]
            .iter()
            .filter(|(bit, _)| p & bit != 0)
            .map(|(_, c)| *c)
            .collect::<String>()
    };
    let text: Vec<String> = acl.iter().map(|a| format!("{}:{}:{}", a.id.scheme, a.id.id, letters(a.perms))).collect();
    AclSpec::Entries(text.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_back_as_the_catalogue_writes_them() {
        for text in [
            "create /a \"x\" flags=2",
            "multi [create /m \"\" flags=0; check /m v=0; delete /m v=-1]",
            "get /a watch",
            "setAcl /x world:anyone:r v=3",
            "createTTL /t \"\" flags=5 ttl=600",
        ] {
            let op = crate::parse::op(text).unwrap();
            assert_eq!(describe(&op.request("")), text);
        }
        assert_eq!(describe(&Request::Ping), "ping");
        assert!(is_write(&crate::parse::op("multi [create /a \"\"]").unwrap().request("")));
        assert!(!is_write(&crate::parse::op("get /a").unwrap().request("")));
    }
}
