//! Naming what differs between two servers that did the same thing: one side's zxids and
//! session ids become labels both sides share, so the proxy (upstream vs oracle) and replay
//! (recording vs target) compare replies and nothing else.
//!
//! A zxid is named by the request that produced it: the successful write with proxy sequence
//! number `n` makes its reply's zxid `w<n>` on that side, whatever the number; a stat's
//! czxid, mzxid and pzxid then read `w<n>` (or `unseen`, for a change no proxied request made:
//! the initial tree, a session's end). A session id is named by the client connection that
//! owns it (`c<n>`).

use std::collections::HashMap;

use serde_json::{json, Value};
use testkeeper_wire::client::{Reply, ZkErrorOrCode};

use crate::reply::{code_name, response_json};

/// Keys whose numbers are zxids.
const ZXID_KEYS: [&str; 3] = ["czxid", "mzxid", "pzxid"];

/// One side's labels.
#[derive(Debug, Default, Clone)]
pub struct Labels {
    zxids: HashMap<i64, String>,
    sessions: HashMap<i64, String>,
}

impl Labels {
    /// Names session `id` after connection `conn`.
    pub fn session(&mut self, id: i64, conn: u64) {
        if id != 0 {
            self.sessions.insert(id, format!("c{conn}"));
        }
    }

    /// The label of session `id`, if it is one of ours.
    pub fn session_label(&self, id: i64) -> Option<&str> {
        self.sessions.get(&id).map(String::as_str)
    }

    /// The reply to request `seq` as JSON, its zxid learnt first when it is a successful write.
    pub fn reply(&mut self, seq: u64, write: bool, reply: &Reply) -> Value {
        if write && reply.body.is_ok() {
            self.zxids.insert(reply.header.zxid, format!("w{seq}"));
        }
        let mut v = match &reply.body {
            Err(ZkErrorOrCode::Known(e)) => json!({"err": code_name(e.code())}),
            Err(ZkErrorOrCode::Unknown(code)) => json!({"err": code_name(*code)}),
            Ok(body) => response_json(body, &|id| {
                json!(self.sessions.get(&id).cloned().unwrap_or_else(|| "other-session".into()))
            }),
        };
        self.rename_zxids(&mut v);
        v
    }

    fn rename_zxids(&self, v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    match (ZXID_KEYS.contains(&k.as_str()), v.as_i64()) {
                        (true, Some(z)) => *v = json!(self.zxids.get(&z).cloned().unwrap_or_else(|| "unseen".into())),
                        _ => self.rename_zxids(v),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.rename_zxids(i)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkeeper_wire::records::header::ReplyHeader;
    use testkeeper_wire::{Response, Stat};

    fn reply(zxid: i64, body: Response) -> Reply {
        Reply { seq: 0, header: ReplyHeader { xid: 1, zxid, err: 0 }, body: Ok(body), raw_body: vec![] }
    }

    #[test]
    fn two_sides_with_different_numbers_read_alike() {
        let (mut a, mut b) = (Labels::default(), Labels::default());
        a.session(0x100, 1);
        b.session(7, 1);
        a.reply(3, true, &reply(500, Response::Create("/x".into())));
        b.reply(3, true, &reply(9, Response::Create("/x".into())));
        let stat = |czxid, owner| Stat { czxid, mzxid: czxid, pzxid: 1, ephemeral_owner: owner, ..Default::default() };
        let ra = a.reply(4, false, &reply(500, Response::Stat(stat(500, 0x100))));
        let rb = b.reply(4, false, &reply(9, Response::Stat(stat(9, 7))));
        assert_eq!(ra, rb);
        assert_eq!(ra["stat"]["czxid"], "w3");
        assert_eq!(ra["stat"]["pzxid"], "unseen");
        assert_eq!(ra["stat"]["ephemeralOwner"], "c1");
    }
}
