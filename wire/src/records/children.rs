//! Children: getChildren, getChildren2, getAllChildrenNumber, getEphemerals.

use super::stat::Stat;

record! {
    /// Body of getChildren (8) and getChildren2 (12).
    pub struct GetChildrenRequest { path: String [str], watch: bool [bool] }
}
record! {
    /// Reply to getChildren.
    pub struct GetChildrenResponse { children: Vec<String> [vec] }
}
record! {
    /// Reply to getChildren2: children and the parent's stat.
    pub struct GetChildren2Response { children: Vec<String> [vec], stat: Stat [rec] }
}
record! {
    /// Reply to getAllChildrenNumber (104).
    pub struct GetAllChildrenNumberResponse { total_number: i32 [i32] }
}
record! {
    /// Reply to getEphemerals (103): the session's ephemeral paths under the prefix.
    pub struct GetEphemeralsResponse { ephemerals: Vec<String> [vec] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn children_records_round_trip() {
        check_round_trip(&GetChildrenRequest { path: "/".into(), watch: true });
        check_round_trip(&GetChildrenResponse { children: vec!["a".into(), "b".into()] });
        check_round_trip(&GetChildren2Response { children: vec!["a".into()], stat: Stat::default() });
        check_round_trip(&GetAllChildrenNumberResponse { total_number: 4 });
        check_round_trip(&GetEphemeralsResponse { ephemerals: vec!["/e".into()] });
    }
}
