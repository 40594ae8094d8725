//! `Stat`: the 68-byte node metadata record, `pzxid` last.

record! {
    /// A node's metadata as a client reads it.
    pub struct Stat {
        /// zxid of the create.
        czxid: i64 [i64],
        /// zxid of the last setData (or the create).
        mzxid: i64 [i64],
        /// Create time, ms since the epoch, decided by the leader.
        ctime: i64 [i64],
        /// Last modification time.
        mtime: i64 [i64],
        /// Number of setData since create.
        version: i32 [i32],
        /// Number of child changes, in the flavor's counting.
        cversion: i32 [i32],
        /// Number of setACL since create.
        aversion: i32 [i32],
        /// Owning session of an ephemeral, a sentinel for container/TTL nodes, else 0.
        ephemeral_owner: i64 [i64],
        data_length: i32 [i32],
        num_children: i32 [i32],
        /// zxid of the last change to the children.
        pzxid: i64 [i64],
    }
}

/// Size of an encoded `Stat`.
pub const STAT_LEN: usize = 68;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::{testing::check_round_trip, Encode};

    #[test]
    fn stat_is_68_bytes_and_round_trips() {
        let s = Stat {
            czxid: 1,
            mzxid: 2,
            ctime: 3,
            mtime: 4,
            version: 5,
            cversion: 6,
            aversion: 7,
            ephemeral_owner: 8,
            data_length: 9,
            num_children: 10,
            pzxid: 11,
        };
        assert_eq!(s.to_bytes().len(), STAT_LEN);
        assert_eq!(&s.to_bytes()[60..68], &11i64.to_be_bytes());
        check_round_trip(&s);
    }
}
