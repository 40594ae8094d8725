//! `publish --reference` on servers that were used before: the differences it reports are
//! real, but they come from the earlier publication, not from the servers, so it says so.

mod support;

use support::{run, stderr, Served};

#[test]
fn two_fresh_servers_compare_equal_without_a_warning() {
    let (a, b) = (Served::start(&[], &[]), Served::start(&[], &[]));
    let same = run(&["publish", "--target", &a.addr, "--reference", &b.addr]);
    assert!(same.status.success(), "{}", stderr(&same));
    assert!(!stderr(&same).contains("not fresh"), "{}", stderr(&same));
}

#[test]
fn a_target_that_was_published_to_before_is_named_as_not_fresh() {
    let (used, fresh) = (Served::start(&[], &[]), Served::start(&[], &[]));
    let first = run(&["publish", "--target", &used.addr]);
    assert!(first.status.success(), "{}", stderr(&first));
    let out = run(&["publish", "--target", &used.addr, "--reference", &fresh.addr]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "the publications differ: {err}");
    assert!(err.contains(&format!("warning: {} is not fresh: 1 authority row(s)", used.addr)), "{err}");
    assert!(!err.contains(&format!("warning: {} is not fresh", fresh.addr)), "{err}");
    assert!(err.contains("(a server was not fresh: see the warning above)"), "{err}");
}
