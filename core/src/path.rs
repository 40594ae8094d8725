//! Path rules: validation as ZooKeeper's `PathUtils.validatePath`, and parent/name splitting.

/// Checks a path the way ZooKeeper does before creating a node.
///
/// Returns a human reason when invalid; the server answers BADARGUMENTS.
pub fn validate(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("path length must be > 0");
    }
    if !path.starts_with('/') {
        return Err("path must start with / character");
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("path must not end with / character");
    }
    let mut last = '/';
    for (i, c) in path.chars().enumerate().skip(1) {
        if c == '\0' {
            return Err("null character not allowed");
        }
        if c == '/' && last == '/' {
            return Err("empty node name specified");
        }
        // "." and ".." as whole segments are relative paths.
        if c == '.' && last == '.' {
            let before = path.as_bytes().get(i.wrapping_sub(2)).copied();
            let after = path.as_bytes().get(i + 1).copied();
            if before == Some(b'/') && (after == Some(b'/') || after.is_none()) {
                return Err("relative paths not allowed");
            }
        } else if c == '.' && last == '/' {
            let after = path.as_bytes().get(i + 1).copied();
            if after == Some(b'/') || after.is_none() {
                return Err("relative paths not allowed");
            }
        }
        if ('\u{1}'..='\u{1f}').contains(&c)
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || ('\u{e000}'..='\u{f8ff}').contains(&c)
            // Java sees characters beyond the BMP as surrogates (d800..dfff), which it refuses.
            || c > '\u{ffff}'
            || ('\u{fff0}'..='\u{ffff}').contains(&c)
        {
            return Err("invalid character");
        }
        last = c;
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

    #[test]
    fn validation_matches_zookeeper() {
        for ok in ["/", "/a", "/a/b", "/a.b", "/..a", "/a..", "/.a"] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        for bad in ["", "a", "/a/", "//a", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/a\0b", "/a\u{1}"] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
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
