//! What cluster nodes send each other: raft-rs's own messages, and ours around them (a
//! follower's forwarded write, the leader's refusal, session activity, zookeeper-flavor sync,
//! and a session's move to the sender).
//!
//! A Raft message says whether its sender already held, in its log, every entry it carries
//! (`stored`): a follower of a 3-node cluster that appends such entries of the sender's term
//! holds them on a majority with the leader, so they are committed (Raft's own definition) and
//! it applies them without waiting one more hop for the leader's commit index.
//!
//! Encoding (little-endian, `testkeeper_core::codec`): a tag byte, then the fields. A Raft
//! message is raft-rs's protobuf bytes, tagged 8 when `stored` and 1 when not; a forwarded write carries the request as its opcode
//! and jute body (the wire codec), and the identities of the connection it came from.

use bytes::BytesMut;
use protobuf::Message as _;
use raft::eraftpb;
use testkeeper_core::codec::{CodecError, Reader, Writer};
use testkeeper_core::propose::Proposal;
use testkeeper_wire::{Id, Request, ZkError};

/// One message between nodes.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// raft-rs's message, and whether every entry in it was in the sender's log when it left.
    Raft {
        msg: eraftpb::Message,
        stored: bool,
    },
    /// A follower's proposal for the leader to decide.
    Forward {
        origin: u64,
        session: i64,
        proposal: Proposal,
    },
    /// The leader did not propose it (it is not the leader any more): fail the waiter.
    Refuse {
        origin: u64,
        code: i32,
    },
    /// Sessions that had activity on the sender since its last report.
    Touch {
        sessions: Vec<i64>,
    },
    /// How far has the leader proposed? (zookeeper flavor's sync)
    SyncAsk {
        id: u64,
    },
    SyncAnswer {
        id: u64,
        index: u64,
    },
    /// zookeeper flavor: `session` was resumed on the sender, which now holds its connection
    /// (ZooKeeper's REVALIDATE: the leader's session tracker records the new owner).
    Revalidate {
        session: i64,
    },
}

fn bad(e: impl std::fmt::Display) -> CodecError {
    CodecError(e.to_string())
}

impl Msg {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends the message's bytes to `out` (a transport's frame buffer: a Raft message's
    /// entries are copied once, into it).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        if let Msg::Raft { msg, stored } = self {
            // As `Writer::blob` would write it, without the protobuf bytes' own Vec first.
            out.push(if *stored { 8 } else { 1 });
            out.extend_from_slice(&msg.compute_size().to_le_bytes());
            let mut os = protobuf::CodedOutputStream::vec(out);
            msg.write_to_with_cached_sizes(&mut os).expect("a raft message encodes");
            os.flush().expect("a Vec takes every byte");
            return;
        }
        let mut w = Writer::new(out);
        match self {
            Msg::Raft { .. } => unreachable!("written above"),
            Msg::Forward { origin, session, proposal } => {
                w.u8(2);
                w.u64(*origin);
                w.i64(*session);
                encode_proposal(&mut w, proposal);
            }
            Msg::Refuse { origin, code } => {
                w.u8(3);
                w.u64(*origin);
                w.i32(*code);
            }
            Msg::Touch { sessions } => {
                w.u8(4);
                w.u32(sessions.len() as u32);
                sessions.iter().for_each(|s| w.i64(*s));
            }
            Msg::SyncAsk { id } => {
                w.u8(5);
                w.u64(*id);
            }
            Msg::SyncAnswer { id, index } => {
                w.u8(6);
                w.u64(*id);
                w.u64(*index);
            }
            Msg::Revalidate { session } => {
                w.u8(7);
                w.i64(*session);
            }
        }
    }

    /// Reads a message.
    ///
    /// # Errors
    /// Bytes that are not one whole message.
    pub fn decode(buf: &[u8]) -> Result<Msg, CodecError> {
        let mut r = Reader::new(buf);
        let msg = match r.u8()? {
            tag @ (1 | 8) => {
                Msg::Raft { msg: eraftpb::Message::parse_from_bytes(r.blob()?).map_err(bad)?, stored: tag == 8 }
            }
            2 => Msg::Forward { origin: r.u64()?, session: r.i64()?, proposal: decode_proposal(&mut r)? },
            3 => Msg::Refuse { origin: r.u64()?, code: r.i32()? },
            4 => {
                let n = r.count(8)?;
                Msg::Touch { sessions: (0..n).map(|_| r.i64()).collect::<Result<_, _>>()? }
            }
            5 => Msg::SyncAsk { id: r.u64()? },
            6 => Msg::SyncAnswer { id: r.u64()?, index: r.u64()? },
            7 => Msg::Revalidate { session: r.i64()? },
            t => return Err(CodecError(format!("unknown cluster message tag {t}"))),
        };
        r.end()?;
        Ok(msg)
    }
}

fn encode_proposal(w: &mut Writer<'_>, p: &Proposal) {
    match p {
        Proposal::Write { req, auth } => {
            w.u8(1);
            w.i32(req.op() as i32);
            let mut body = BytesMut::new();
            req.encode_body(&mut body);
            w.blob(&body);
            w.u32(auth.len() as u32);
            for a in auth {
                w.str(&a.scheme);
                w.str(&a.id);
            }
        }
        Proposal::CreateSession { timeout_ms, passwd } => {
            w.u8(2);
            w.i32(*timeout_ms);
            passwd.iter().for_each(|b| w.u8(*b));
        }
        Proposal::CloseSession { id } => {
            w.u8(3);
            w.i64(*id);
        }
        Proposal::Noop => w.u8(4),
        Proposal::Fail(e) => {
            w.u8(5);
            w.i32(e.code());
        }
    }
}

fn decode_proposal(r: &mut Reader<'_>) -> Result<Proposal, CodecError> {
    Ok(match r.u8()? {
        1 => {
            let op = r.i32()?;
            let req = Request::decode_body(op, r.blob()?).map_err(bad)?;
            let n = r.count(8)?;
            let auth =
                (0..n).map(|_| Ok(Id { scheme: r.string()?, id: r.string()? })).collect::<Result<_, CodecError>>()?;
            Proposal::Write { req, auth }
        }
        2 => Proposal::CreateSession { timeout_ms: r.i32()?, passwd: r.array16()? },
        3 => Proposal::CloseSession { id: r.i64()? },
        4 => Proposal::Noop,
        5 => {
            let code = r.i32()?;
            Proposal::Fail(ZkError::from_code(code).ok_or_else(|| CodecError(format!("unknown error code {code}")))?)
        }
        t => return Err(CodecError(format!("unknown proposal tag {t}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkeeper_wire::records::create::CreateRequest;
    use testkeeper_wire::{Acl, CreateOp, OpCode};

    #[test]
    fn every_message_round_trips_and_truncations_fail() {
        let create = Request::Create(CreateOp {
            op: OpCode::Create2,
            req: CreateRequest { path: "/a".into(), data: Some(b"x".to_vec()), acl: Acl::open(), flags: 1 },
            ttl: 0,
        });
        let mut raft = eraftpb::Message::default();
        raft.set_msg_type(eraftpb::MessageType::MsgAppend);
        (raft.to, raft.from, raft.term, raft.commit) = (2, 1, 7, 41);
        let mut e = eraftpb::Entry::default();
        (e.index, e.term, e.data) = (42, 7, bytes::Bytes::from_static(b"an entry's bytes"));
        raft.entries = vec![e.clone(), e].into();
        let msgs = [
            Msg::Raft { msg: raft.clone(), stored: false },
            Msg::Raft { msg: raft, stored: true },
            Msg::Forward {
                origin: 1 << 48 | 9,
                session: 5,
                proposal: Proposal::Write { req: create, auth: vec![Id { scheme: "digest".into(), id: "u:h".into() }] },
            },
            Msg::Forward {
                origin: 3,
                session: 0,
                proposal: Proposal::CreateSession { timeout_ms: 10_000, passwd: [4; 16] },
            },
            Msg::Forward { origin: 4, session: 6, proposal: Proposal::CloseSession { id: 6 } },
            Msg::Forward { origin: 5, session: 6, proposal: Proposal::Noop },
            Msg::Refuse { origin: 7, code: -4 },
            Msg::Touch { sessions: vec![1, 2, 3] },
            Msg::SyncAsk { id: 8 },
            Msg::SyncAnswer { id: 8, index: 99 },
            Msg::Forward { origin: 6, session: 7, proposal: Proposal::Fail(ZkError::SessionMoved) },
            Msg::Revalidate { session: 0x0100_0000_0000_0001 },
        ];
        for m in msgs {
            let b = m.encode();
            assert_eq!(Msg::decode(&b).as_ref(), Ok(&m));
            assert!(Msg::decode(&b[..b.len() - 1]).is_err(), "{m:?}");
        }
    }
}
