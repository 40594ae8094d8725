//! Node data and existence: getData, setData, exists, delete, check, sync.

use super::stat::Stat;

record! {
    /// Body of getData (4).
    pub struct GetDataRequest { path: String [str], watch: bool [bool] }
}
record! {
    /// Reply to getData.
    pub struct GetDataResponse { data: Option<Vec<u8>> [obuf], stat: Stat [rec] }
}
record! {
    /// Body of setData (5).
    pub struct SetDataRequest { path: String [str], data: Option<Vec<u8>> [obuf], version: i32 [i32] }
}
record! {
    /// Reply to setData, exists and setACL: the node's stat after the op.
    pub struct StatResponse { stat: Stat [rec] }
}
record! {
    /// Body of exists (3).
    pub struct ExistsRequest { path: String [str], watch: bool [bool] }
}
record! {
    /// Body of delete (2) and Keeper's tryRemove (505).
    pub struct DeleteRequest { path: String [str], version: i32 [i32] }
}
record! {
    /// Body of check (13) and Keeper's checkNotExists (501).
    pub struct CheckVersionRequest { path: String [str], version: i32 [i32] }
}
record! {
    /// Body of sync (9) and its reply; also any path-only request.
    pub struct PathRecord { path: String [str] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn data_records_round_trip() {
        check_round_trip(&GetDataRequest { path: "/a".into(), watch: true });
        check_round_trip(&GetDataResponse { data: Some(b"hello".to_vec()), stat: Stat::default() });
        check_round_trip(&SetDataRequest { path: "/a".into(), data: Some(vec![1, 2]), version: -1 });
        check_round_trip(&StatResponse { stat: Stat { version: 2, ..Default::default() } });
        check_round_trip(&ExistsRequest { path: "/a".into(), watch: false });
        check_round_trip(&DeleteRequest { path: "/a".into(), version: 3 });
        check_round_trip(&CheckVersionRequest { path: "/a".into(), version: 0 });
        check_round_trip(&PathRecord { path: "/".into() });
    }
}
