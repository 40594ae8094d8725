//! Path rules: what each flavor's server refuses in a written path (ZooKeeper's
//! `PathUtils.validatePath`, Keeper's few checks), and parent/name splitting.

use crate::flavor::Rules;

/// Checks a path the way the flavor's server does before a create, setData or setACL:
/// ZooKeeper's `PathUtils.validatePath` ([`validate_zookeeper`]), or Keeper's structural
/// checks ([`validate_keeper`]).
///
/// # Errors
/// A human reason when invalid; the server answers BADARGUMENTS.
pub fn validate(path: &str, rules: &Rules) -> Result<(), &'static str> {
    if rules.zookeeper_path_rules {
        validate_zookeeper(path)
    } else {
        validate_keeper(path)
    }
}

/// What Keeper refuses. Its storage checks only that a created node's name is not empty (a
/// trailing `/`; `KeeperStorage` create preprocess), so `.`, `..` and any character are
/// names like others. Beyond that this refuses what no tree can hold: an empty path, one
/// without a leading `/`, and an empty segment (`//`), which Keeper would store under a path
/// its own parent/child bookkeeping cannot reach (see docs/flavors.md).
///
/// # Errors
/// A human reason when invalid; the server answers BADARGUMENTS.
pub fn validate_keeper(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("path length must be > 0");
    }
    if !path.starts_with('/') {
        return Err("path must start with / character");
    }
    if path.len() > 1 && path.ends_with('/') {
        return Err("path must not end with / character");
    }
    if path.contains("//") {
        return Err("empty node name specified");
    }
    Ok(())
}

/// Checks a path exactly as ZooKeeper's `PathUtils.validatePath` does.
///
/// Java walks the path's UTF-16 code units, and so does this: every position (the `.`/`..`
/// segment checks look one and two units around) is a code-unit index, never a byte index.
/// A character beyond the Basic Multilingual Plane is two surrogate units, which fall in the
/// refused `\u{d800}`..`\u{f8ff}` range, so such paths are invalid.
///
/// # Errors
/// A human reason when invalid; the server answers BADARGUMENTS.
pub fn validate_zookeeper(path: &str) -> Result<(), &'static str> {
    const SLASH: u16 = b'/' as u16;
    const DOT: u16 = b'.' as u16;
    if path.is_empty() {
        return Err("path length must be > 0");
    }
    if !path.starts_with('/') {
        return Err("path must start with / character");
    }
    if path.len() == 1 {
        return Ok(());
    }
    // '/' is one byte and one code unit, so the byte test is the unit test.
    if path.ends_with('/') {
        return Err("path must not end with / character");
    }
    // Walk units 1.. with the two before and the one after in hand (no allocation: this runs
    // on every create).
    let mut units = path.encode_utf16().skip(1).peekable();
    let (mut before_last, mut last) = (0u16, SLASH);
    while let Some(c) = units.next() {
        let ends_segment = units.peek().is_none_or(|u| *u == SLASH);
        if c == 0 {
            return Err("null character not allowed");
        } else if c == SLASH && last == SLASH {
            return Err("empty node name specified");
        } else if c == DOT && last == DOT {
            // `..` as a whole segment. (Java's else-if chain skips the `.` test here, so a
            // `...` segment is allowed.)
            if before_last == SLASH && ends_segment {
                return Err("relative paths not allowed");
            }
        } else if c == DOT {
            if last == SLASH && ends_segment {
                return Err("relative paths not allowed");
            }
        } else if (0x01..=0x1f).contains(&c)
            || (0x7f..=0x9f).contains(&c)
            || (0xd800..=0xf8ff).contains(&c)
            || (0xfff0..=0xffff).contains(&c)
        {
            return Err("invalid character");
        }
        (before_last, last) = (last, c);
    }
    Ok(())
}

/// Splits `/a/b` into (`/a`, `b`) and `/a` into (`/`, `a`). The root has no parent.
pub fn split(path: &str) -> Option<(&str, &str)> {
    if path == "/" {
        return None;
    }
    let i = path.rfind('/')?;
    let parent = if i == 0 { "/" } else { &path[..i] };
    Some((parent, &path[i + 1..]))
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Whether `path` is `prefix` or lies under it.
pub fn is_under(path: &str, prefix: &str) -> bool {
    prefix == "/" || path == prefix || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flavor::Flavor;

    #[test]
    fn validation_matches_zookeeper() {
        for ok in ["/", "/a", "/a/b", "/a.b", "/..a", "/a..", "/.a", "/...", "/a/...", "/a/.../b", "/a./b", "/a/b."] {
            assert_eq!(validate_zookeeper(ok), Ok(()), "{ok}");
        }
        for bad in
            ["", "a", "/a/", "//a", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/a\0b", "/a\u{1}", "/a/.", "/a/.."]
        {
            assert!(validate_zookeeper(bad).is_err(), "{bad:?}");
        }
    }

    /// Issue 16: positions are code units, not bytes. `/é/.` used to pass (the byte after the
    /// dot was looked up by character index) and `/€/.x` to fail.
    #[test]
    fn positions_are_code_units_not_bytes() {
        for bad in ["/é/.", "/é/..", "/€/.", "/éé/..", "/a/é/../b", "/\u{1f600}", "/a\u{10000}b"] {
            assert!(validate_zookeeper(bad).is_err(), "{bad:?}");
        }
        for ok in ["/€/.x", "/éé/.a", "/€/..x", "/é/x.", "/日本/..語", "/é.", "/\u{e9}\u{301}"] {
            assert_eq!(validate_zookeeper(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn the_refused_ranges_are_javas() {
        for c in ['\u{1}', '\u{1f}', '\u{7f}', '\u{9f}', '\u{e000}', '\u{f8ff}', '\u{fff0}', '\u{ffff}'] {
            assert_eq!(validate_zookeeper(&format!("/a{c}")), Err("invalid character"), "{:x}", c as u32);
        }
        for c in [' ', '~', '\u{a0}', '\u{d7ff}', '\u{f900}', '\u{ffef}'] {
            assert_eq!(validate_zookeeper(&format!("/a{c}")), Ok(()), "{:x}", c as u32);
        }
    }

    #[test]
    fn keeper_refuses_only_what_no_tree_can_hold() {
        for ok in ["/", "/a", "/a/.", "/a/..", "/é/.", "/a\u{1}", "/\u{1f600}", "/a/./b", "/\u{ffff}"] {
            assert_eq!(validate_keeper(ok), Ok(()), "{ok:?}");
        }
        for bad in ["", "a", "/a/", "//a", "/a//b"] {
            assert!(validate_keeper(bad).is_err(), "{bad:?}");
        }
        let (zk, keeper) = (Rules::new(Flavor::Zookeeper, 0), Rules::new(Flavor::Keeper, 0));
        assert!(validate("/a/.", &zk).is_err());
        assert_eq!(validate("/a/.", &keeper), Ok(()));
    }

    #[test]
    fn split_and_join() {
        assert_eq!(split("/a/b"), Some(("/a", "b")));
        assert_eq!(split("/a"), Some(("/", "a")));
        assert_eq!(split("/"), None);
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert!(is_under("/a/b", "/a"));
        assert!(!is_under("/ab", "/a"));
        assert!(is_under("/ab", "/"));
    }
}
