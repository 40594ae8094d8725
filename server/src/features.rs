//! ClickHouse Keeper feature flags: names, and the MSB-first bitmask stored in
//! `/keeper/feature_flags` (KeeperFeatureFlags.{h,cpp}: flag n is bit 7 - n%8 of byte n/8).

/// Flag names in Keeper's enum order; the order is the wire format and "cannot be reordered".
pub const FLAG_NAMES: [&str; 11] = [
    "filtered_list",
    "multi_read",
    "check_not_exists",
    "create_if_not_exists",
    "remove_recursive",
    "multi_watches",
    "check_stat",
    "persistent_watches",
    "create_with_stats",
    "try_remove",
    "list_with_stat_and_data",
];

/// A set of feature flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureFlags(u16);

/// A feature flag name Keeper does not have (the name as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFeature(pub String);

impl std::fmt::Display for UnknownFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown feature flag '{}' (known: {})", self.0, FLAG_NAMES.join(", "))
    }
}

impl std::error::Error for UnknownFeature {}

impl FeatureFlags {
    /// Keeper's default: filtered_list and multi_read (KeeperContext.cpp).
    pub fn keeper_default() -> FeatureFlags {
        FeatureFlags(0b11)
    }

    /// Every flag.
    pub fn all() -> FeatureFlags {
        FeatureFlags((1 << FLAG_NAMES.len()) - 1)
    }

    /// Whether flag `name` is on.
    pub fn is_enabled(self, name: &str) -> bool {
        FLAG_NAMES.iter().position(|n| *n == name).is_some_and(|i| self.0 & (1 << i) != 0)
    }

    /// Turns a flag on or off.
    ///
    /// # Errors
    /// An unknown flag name.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), UnknownFeature> {
        let i =
            FLAG_NAMES.iter().position(|n| n.eq_ignore_ascii_case(name)).ok_or_else(|| UnknownFeature(name.into()))?;
        if on {
            self.0 |= 1 << i;
        } else {
            self.0 &= !(1 << i);
        }
        Ok(())
    }

    /// Parses `all`, `default`, or a comma list like `default,check_not_exists,-multi_read`.
    ///
    /// # Errors
    /// An unknown flag name.
    pub fn parse(spec: &str) -> Result<FeatureFlags, UnknownFeature> {
        let mut f = FeatureFlags(0);
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "all" => f = FeatureFlags::all(),
                "default" => f.0 |= FeatureFlags::keeper_default().0,
                "none" => f = FeatureFlags(0),
                neg if neg.starts_with('-') => f.set(&neg[1..], false)?,
                name => f.set(name, true)?,
            }
        }
        Ok(f)
    }

    /// The raw bytes stored in `/keeper/feature_flags`.
    pub fn to_bytes(self) -> Vec<u8> {
        let mut out = vec![0u8; FLAG_NAMES.len().div_ceil(8)];
        for i in 0..FLAG_NAMES.len() {
            if self.0 & (1 << i) != 0 {
                out[i / 8] |= 1 << (7 - i % 8);
            }
        }
        out
    }

    /// The `ftfl` four-letter-word output.
    pub fn ftfl(self) -> String {
        FLAG_NAMES.iter().enumerate().map(|(i, n)| format!("{n}\t{}\n", (self.0 >> i) & 1)).collect()
    }

    /// The `/keeper/api_version` value this set implies (KeeperApiVersion).
    pub fn api_version(self) -> u8 {
        if self.is_enabled("check_not_exists") {
            3
        } else if self.is_enabled("multi_read") {
            2
        } else if self.is_enabled("filtered_list") {
            1
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_keeper() {
        assert_eq!(FeatureFlags::keeper_default().to_bytes(), vec![0xC0, 0x00]);
        assert_eq!(FeatureFlags::all().to_bytes(), vec![0xFF, 0xE0]);
        let f = FeatureFlags::parse("default,check_not_exists,-multi_read").unwrap();
        assert_eq!(f.to_bytes(), vec![0xA0, 0x00]);
        assert!(FeatureFlags::parse("bogus").is_err());
        assert_eq!(FeatureFlags::keeper_default().api_version(), 2);
        assert!(FeatureFlags::keeper_default()
            .ftfl()
            .starts_with("filtered_list\t1\nmulti_read\t1\ncheck_not_exists\t0\n"));
    }
}
