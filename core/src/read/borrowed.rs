//! The reads clients send most (getData, getChildren, getChildren2) answered by reference:
//! the engine encodes the reply straight from the tree into the connection's buffer.
//!
//! `State::read` builds an owned `Response`: a copy of the node's data for getData, and one
//! `String` per child for a listing, each allocated, encoded and freed again. Under
//! `testkeeper bench`'s default mix (half getData, 5% listings of about 128 children) this
//! path takes 30% off the engine's time per request (`cargo bench -p testkeeper-server
//! --bench engine`; docs/performance.md, "Pipelined"). The bytes on the wire are the same
//! either way; a unit test holds the two paths to it.

use bytes::{BufMut, BytesMut};
use testkeeper_wire::jute::{put_opt_bytes, put_str, Encode};
use testkeeper_wire::{Request, ZkError};

use super::super::acl::AuthId;
use super::super::state::State;
use super::super::tree::NodeRef;

/// A read's answer, still in the tree: what to encode and how.
#[derive(Clone, Copy)]
pub struct Borrowed<'a> {
    node: NodeRef<'a>,
    body: Body,
    hide_special_owners: bool,
}

/// The reply body a borrowed read encodes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Body {
    /// getData: the data (or null) and the stat.
    Data,
    /// getChildren: the child names.
    Children,
    /// getChildren2: the child names and the stat.
    Children2,
}

impl State {
    /// `req` answered by reference if it is one of the reads this path serves (`None`
    /// otherwise: use [`State::read`]). Errors are exactly `read`'s for the same request.
    ///
    /// # Errors
    /// The ZooKeeper error the real server would return (NONODE, NOAUTH).
    pub fn read_borrowed(&self, req: &Request, auth: &[AuthId]) -> Option<Result<Borrowed<'_>, ZkError>> {
        let (path, body) = match req {
            Request::GetData(r) => (&r.path, Body::Data),
            Request::GetChildren(r) => (&r.path, Body::Children),
            Request::GetChildren2(r) => (&r.path, Body::Children2),
            _ => return None,
        };
        let hide_special_owners = self.rules.hide_special_owners;
        Some(self.readable(path, auth).map(|node| Borrowed { node, body, hide_special_owners }))
    }
}

impl Borrowed<'_> {
    /// Appends the reply body (what follows the reply header) to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        let n = &self.node;
        match self.body {
            Body::Data => {
                put_opt_bytes(out, (!n.data_is_null()).then(|| n.data()));
                n.client_stat(self.hide_special_owners).encode(out);
            }
            Body::Children => put_names(out, n),
            Body::Children2 => {
                put_names(out, n);
                n.client_stat(self.hide_special_owners).encode(out);
            }
        }
    }
}

/// A `vector<ustring>` of `n`'s child names in table order (as `State::read` lists them),
/// its count written once the names are.
fn put_names(out: &mut BytesMut, n: &NodeRef<'_>) {
    let at = out.len();
    out.put_i32(0);
    let mut count: i32 = 0;
    for child in n.children_unordered() {
        put_str(out, child.name());
        count += 1;
    }
    out[at..at + 4].copy_from_slice(&count.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use testkeeper_wire::records::children::GetChildrenRequest;
    use testkeeper_wire::records::create::CreateRequest;
    use testkeeper_wire::records::data::{ExistsRequest, GetDataRequest};
    use testkeeper_wire::{perms, Acl, CreateOp, Id, OpCode, Response};

    use super::*;
    use crate::flavor::Flavor;
    use crate::testutil::{create, create_op, Harness};

    /// The body `State::read` answers, encoded, or its error.
    fn owned(s: &State, req: &Request, auth: &[AuthId]) -> Result<Vec<u8>, ZkError> {
        let mut out = BytesMut::new();
        s.read(req, auth, 0).map(|r: Response| r.encode(&mut out))?;
        Ok(out.to_vec())
    }

    fn borrowed(s: &State, req: &Request, auth: &[AuthId]) -> Result<Vec<u8>, ZkError> {
        let mut out = BytesMut::new();
        s.read_borrowed(req, auth).expect("a borrowed read")?.encode(&mut out);
        Ok(out.to_vec())
    }

    #[test]
    fn borrowed_and_owned_reads_put_the_same_bytes_on_the_wire() {
        for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
            let mut h = Harness::new(flavor);
            let session = h.session();
            let odd = testkeeper_wire::rawstr::from_raw(b"/p/\xff\xfe");
            let secret = Acl { perms: perms::ALL, id: Id { scheme: "digest".into(), id: "u:h".into() } };
            let locked =
                CreateRequest { path: "/secret".into(), data: Some(b"x".to_vec()), acl: vec![secret], flags: 0 };
            let mut writes = vec![
                create("/p", b"data", 0),
                create_op(OpCode::Create, "/p/null", 0, 0),
                create("/p/\u{e9}", b"", 0),
                create(&odd, b"odd", 0),
                create("/p/eph", b"e", 1),
                create_op(OpCode::CreateContainer, "/box", 0, 0),
                create("/box/in", b"", 0),
                Request::Create(CreateOp { op: OpCode::Create, req: locked, ttl: 0 }),
            ];
            writes.extend((0..40).map(|i| create(&format!("/p/n{i}"), &vec![i as u8; i], 0)));
            for w in &writes {
                h.write(session, w);
            }
            let paths =
                ["/", "/p", "/p/null", "/p/\u{e9}", odd.as_str(), "/p/eph", "/box", "/p/n7", "/secret", "/nope", ""];
            for path in paths {
                let reqs = [
                    Request::GetData(GetDataRequest { path: path.into(), watch: false }),
                    Request::GetChildren(GetChildrenRequest { path: path.into(), watch: true }),
                    Request::GetChildren2(GetChildrenRequest { path: path.into(), watch: false }),
                ];
                for req in &reqs {
                    let want = owned(&h.state, req, &[]);
                    assert_eq!(borrowed(&h.state, req, &[]), want, "{flavor:?} {req:?}");
                }
            }
            let denied = Request::GetData(GetDataRequest { path: "/secret".into(), watch: false });
            assert_eq!(borrowed(&h.state, &denied, &[]), Err(ZkError::NoAuth), "the reads are checked, not just equal");
        }
    }

    #[test]
    fn other_requests_are_left_to_the_owned_path() {
        let h = Harness::new(Flavor::Keeper);
        let exists = Request::Exists(ExistsRequest { path: "/".into(), watch: false });
        assert!(h.state.read_borrowed(&exists, &[]).is_none());
    }
}
