//! The one `Response` enum: every reply body, encoded by the server and decoded by the client
//! given the opcode of the request it answers.

use bytes::BytesMut;

use crate::error::DecodeError;
use crate::jute::{put_i32, put_str, put_vec, Decode, Encode, Reader};
use crate::opcode::{OpCode, Reply};
use crate::records::acl::Acl;
use crate::records::keeper_ext::ListWithStatsAndDataResponse;
use crate::records::multi::MultiHeader;
use crate::records::session::{ClientInfo, ErrorResponse};
use crate::records::stat::Stat;

/// A reply body. Error replies have no body: they are only a `ReplyHeader` with `err` set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// delete, check, ping, auth, close, setWatches, addWatch, removeWatches...
    Empty,
    /// create and createIfNotExists: the created path.
    Create(String),
    /// create2, createContainer, createTTL.
    Create2 { path: String, stat: Stat },
    /// exists, setData, setACL.
    Stat(Stat),
    /// getData; `None` is null data (ZooKeeper keeps null apart from empty).
    Data { data: Option<Vec<u8>>, stat: Stat },
    /// getACL.
    Acl { acl: Vec<Acl>, stat: Stat },
    /// getChildren.
    Children(Vec<String>),
    /// getChildren2 and filteredList.
    Children2 { children: Vec<String>, stat: Stat },
    /// sync.
    Path(String),
    /// getEphemerals and listRecursive.
    Paths(Vec<String>),
    /// getAllChildrenNumber, and addWatch (whose body is an `ErrorResponse` holding 0).
    Number(i32),
    /// filteredListWithStatsAndData.
    ListWithStatsAndData(ListWithStatsAndDataResponse),
    /// whoAmI.
    WhoAmI(Vec<ClientInfo>),
    /// multi and multiRead.
    Multi(Vec<MultiResult>),
}

/// One sub-result of a multi or multiRead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// A successful sub-op: header `{op, false, 0}` then its body.
    Ok(OpCode, Response),
    /// ZooKeeper's error form: header `{-1, false, code}` then `ErrorResponse {code}`.
    /// A failed write multi reports 0 here for the ops before the failing one.
    Error(i32),
    /// ClickHouse Keeper's multiRead error form: header `{op, false, code}` and no body.
    OpError(OpCode, i32),
}

impl Response {
    /// Encodes the body.
    pub fn encode(&self, out: &mut BytesMut) {
        match self {
            Response::Empty => {}
            Response::Create(p) | Response::Path(p) => put_str(out, p),
            Response::Create2 { path, stat } => {
                put_str(out, path);
                stat.encode(out);
            }
            Response::Stat(s) => s.encode(out),
            Response::Data { data, stat } => {
                crate::jute::put_opt_bytes(out, data.as_deref());
                stat.encode(out);
            }
            Response::Acl { acl, stat } => {
                put_vec(out, acl);
                stat.encode(out);
            }
            Response::Children(c) | Response::Paths(c) => put_vec(out, c),
            Response::Children2 { children, stat } => {
                put_vec(out, children);
                stat.encode(out);
            }
            Response::Number(n) => put_i32(out, *n),
            Response::WhoAmI(info) => put_vec(out, info),
            Response::ListWithStatsAndData(r) => r.encode(out),
            Response::Multi(results) => {
                for res in results {
                    match res {
                        MultiResult::Ok(op, body) => {
                            MultiHeader::op(*op as i32, 0).encode(out);
                            body.encode(out);
                        }
                        MultiResult::Error(code) => {
                            MultiHeader::op(-1, *code).encode(out);
                            ErrorResponse { err: *code }.encode(out);
                        }
                        MultiResult::OpError(op, code) => MultiHeader::op(*op as i32, *code).encode(out),
                    }
                }
                MultiHeader::encode_end(out);
            }
        }
    }

    /// Decodes a successful reply body to a request with opcode `op`.
    ///
    /// # Errors
    /// Any record error, or `UnknownOpCode` for ops that have no reply body layout.
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Response, DecodeError> {
        let mut r = Reader::new(body);
        Self::decode_from(op, &mut r)
    }

    fn decode_from(op: OpCode, r: &mut Reader<'_>) -> Result<Response, DecodeError> {
        // The layout is the op's line in the per-op table (`opcode.rs`).
        Ok(match op.reply() {
            Reply::Empty => Response::Empty,
            Reply::Path => Response::Create(r.string("CreateResponse.path")?),
            Reply::PathStat => Response::Create2 { path: r.string("Create2Response.path")?, stat: Stat::decode(r)? },
            Reply::Stat => Response::Stat(Stat::decode(r)?),
            Reply::Data => Response::Data { data: r.opt_buffer("GetDataResponse.data")?, stat: Stat::decode(r)? },
            Reply::Acl => Response::Acl { acl: r.vec("GetACLResponse.acl")?, stat: Stat::decode(r)? },
            Reply::Children => Response::Children(r.vec("GetChildrenResponse.children")?),
            Reply::Children2 => {
                Response::Children2 { children: r.vec("GetChildren2Response.children")?, stat: Stat::decode(r)? }
            }
            Reply::Synced => Response::Path(r.string("SyncResponse.path")?),
            Reply::Paths => Response::Paths(r.vec("paths")?),
            Reply::Number => Response::Number(r.i32("Response.number")?),
            Reply::ListWithStatsAndData => Response::ListWithStatsAndData(ListWithStatsAndDataResponse::decode(r)?),
            Reply::WhoAmI => Response::WhoAmI(r.vec("WhoAmIResponse.clientInfo")?),
            Reply::Multi => Response::Multi(decode_multi_results(r)?),
            Reply::Nothing => return Err(DecodeError::UnknownOpCode(op as i32)),
        })
    }
}

fn decode_multi_results(r: &mut Reader<'_>) -> Result<Vec<MultiResult>, DecodeError> {
    let mut out = Vec::new();
    loop {
        let h = MultiHeader::read(r)?;
        if h.done {
            return Ok(out);
        }
        if h.op == -1 {
            let e = ErrorResponse::decode(r)?;
            out.push(MultiResult::Error(e.err));
            continue;
        }
        let op = OpCode::try_from(h.op).map_err(DecodeError::UnknownOpCode)?;
        // No server nests multis, and following nested headers recursively would let one
        // reply frame overflow the client's stack (9 bytes per level).
        if matches!(op, OpCode::Multi | OpCode::MultiRead) {
            return Err(DecodeError::Malformed("nested multi result"));
        }
        if h.err != 0 {
            out.push(MultiResult::OpError(op, h.err));
        } else {
            out.push(MultiResult::Ok(op, Response::decode_from(op, r)?));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(op: OpCode, resp: Response) {
        let mut out = BytesMut::new();
        resp.encode(&mut out);
        assert_eq!(Response::decode(op, &out).unwrap(), resp);
        if !out.is_empty() {
            assert!(Response::decode(op, &out[..out.len() - 1]).is_err(), "short {resp:?}");
        }
    }

    #[test]
    fn every_response_round_trips() {
        let stat = Stat { czxid: 5, pzxid: 9, ..Default::default() };
        round_trip(OpCode::Create, Response::Create("/a".into()));
        round_trip(OpCode::Create2, Response::Create2 { path: "/a".into(), stat: stat.clone() });
        round_trip(OpCode::Exists, Response::Stat(stat.clone()));
        round_trip(OpCode::GetData, Response::Data { data: Some(b"x".to_vec()), stat: stat.clone() });
        round_trip(OpCode::GetAcl, Response::Acl { acl: Acl::open(), stat: stat.clone() });
        round_trip(OpCode::GetChildren, Response::Children(vec!["a".into()]));
        round_trip(OpCode::GetChildren2, Response::Children2 { children: vec![], stat: stat.clone() });
        round_trip(OpCode::Sync, Response::Path("/".into()));
        round_trip(OpCode::GetAllChildrenNumber, Response::Number(3));
        round_trip(OpCode::GetEphemerals, Response::Paths(vec!["/e".into()]));
        round_trip(OpCode::WhoAmI, Response::WhoAmI(vec![ClientInfo { auth_scheme: "ip".into(), user: "x".into() }]));
        round_trip(
            OpCode::Multi,
            Response::Multi(vec![
                MultiResult::Ok(OpCode::Create, Response::Create("/a".into())),
                MultiResult::Ok(OpCode::SetData, Response::Stat(stat)),
                MultiResult::Error(0),
                MultiResult::Error(-101),
                MultiResult::OpError(OpCode::GetData, -101),
            ]),
        );
        round_trip(OpCode::Delete, Response::Empty);
    }

    #[test]
    fn nested_multi_results_are_rejected_not_recursed() {
        // 100k nested headers fit in one frame; recursing into them overflowed the stack.
        let body: Vec<u8> = [0, 0, 0, 14, 0, 0, 0, 0, 0].repeat(100_000);
        assert_eq!(Response::decode(OpCode::Multi, &body), Err(DecodeError::Malformed("nested multi result")));
    }
}
