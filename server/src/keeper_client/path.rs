//! keeper-client's path resolution (`KeeperClient::getAbsolutePath`): a path that does not
//! start with `/` is relative to the working path; `.` and `..` are resolved as
//! `std::filesystem::weakly_canonical` does (`..` of `/` is `/`); no trailing slash but on `/`.

/// `relative` made absolute against `cwd`.
pub fn absolute(cwd: &str, relative: &str) -> String {
    let joined = if relative.starts_with('/') { relative.to_string() } else { format!("{cwd}/{relative}") };
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `child` under `parent` (`/` has no trailing separator to drop).
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_dots_and_slashes() {
        assert_eq!(absolute("/", "a"), "/a");
        assert_eq!(absolute("/a/b", "c"), "/a/b/c");
        assert_eq!(absolute("/a/b", ".."), "/a");
        assert_eq!(absolute("/a", "../../.."), "/");
        assert_eq!(absolute("/a", "/x/./y/"), "/x/y");
        assert_eq!(absolute("/a", "."), "/a");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }
}
