//! The error of every `FromStr` that takes one of a fixed set of names (a flavor, a
//! ZooKeeper version; the server's fsync and broken modes): the name as given and what was
//! expected, so that a flag, a config file and an HTTP body refuse it with the same words.

use std::fmt;

/// A name that is not one of the known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named (`flavor`, `ZooKeeper version`...).
    pub what: &'static str,
    /// The name as given.
    pub name: String,
    /// The known names, as the message lists them.
    pub expected: String,
}

impl UnknownName {
    /// `name` is not a `what`; `expected` lists the known ones.
    pub fn new(what: &'static str, name: &str, expected: impl Into<String>) -> UnknownName {
        UnknownName { what, name: name.to_string(), expected: expected.into() }
    }

    /// `name` is not a `what`; the message lists every known name.
    pub fn one_of<'a>(what: &'static str, name: &str, known: impl IntoIterator<Item = &'a str>) -> UnknownName {
        let known: Vec<&str> = known.into_iter().collect();
        UnknownName::new(what, name, format!("one of: {}", known.join(", ")))
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} '{}' (expected {})", self.what, self.name, self.expected)
    }
}

impl std::error::Error for UnknownName {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_value_and_what_was_expected() {
        let e = UnknownName::new("flavor", "kepper", "'keeper' or 'zookeeper'");
        assert_eq!(e.to_string(), "unknown flavor 'kepper' (expected 'keeper' or 'zookeeper')");
        let e = UnknownName::one_of("workload", "regster", ["register", "set"]);
        assert_eq!(e.to_string(), "unknown workload 'regster' (expected one of: register, set)");
    }
}
