//! The scenario catalogue: the files under `conformance/scenarios/`, compiled in, in run
//! order, and the catalogue section of `docs/conformance.md` generated from them.
//!
//! # Layout
//! - this file: the file list, [`all`], and the checks every file must pass.
//! - `doc`: the generated Markdown catalogue and the test that keeps the doc in step.

mod doc;

pub use doc::{catalogue_markdown, DOC_BEGIN, DOC_END};

use crate::scenario::Scenario;

/// Every scenario file, in run order.
pub const FILES: &[(&str, &str)] = &[
    ("ops.txt", include_str!("../../scenarios/ops.txt")),
    ("stats.txt", include_str!("../../scenarios/stats.txt")),
    ("sequential.txt", include_str!("../../scenarios/sequential.txt")),
    ("multi.txt", include_str!("../../scenarios/multi.txt")),
    ("acl.txt", include_str!("../../scenarios/acl.txt")),
    ("watches.txt", include_str!("../../scenarios/watches.txt")),
    ("nodes.txt", include_str!("../../scenarios/nodes.txt")),
    ("sessions.txt", include_str!("../../scenarios/sessions.txt")),
    ("system.txt", include_str!("../../scenarios/system.txt")),
    ("keeper.txt", include_str!("../../scenarios/keeper.txt")),
    ("clickhouse.txt", include_str!("../../scenarios/clickhouse.txt")),
    ("cluster.txt", include_str!("../../scenarios/cluster.txt")),
];

/// Every scenario, in run order.
///
/// # Panics
/// When a scenario file does not parse: they are compiled in, and a unit test parses them all.
pub fn all() -> Vec<Scenario> {
    FILES
        .iter()
        .flat_map(|(name, text)| crate::parse::scenarios(name, text).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Step;

    #[test]
    fn every_file_parses_and_names_are_unique() {
        for (name, text) in FILES {
            crate::parse::scenarios(name, text).unwrap_or_else(|e| panic!("{e}"));
        }
        let all = all();
        let mut names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "duplicate scenario names");
    }

    #[test]
    fn the_catalogue_is_large_and_every_scenario_names_its_source() {
        let all = all();
        assert!(all.len() >= 150, "{} scenarios", all.len());
        for sc in &all {
            assert!(sc.source.len() > 8 && sc.about.len() > 8, "{}: about/source too thin", sc.name);
        }
    }

    #[test]
    fn every_step_reads_back_from_its_own_text() {
        for sc in all() {
            for s in &sc.steps {
                let line = s.line();
                let back = crate::parse::step(&line).unwrap_or_else(|e| panic!("{}: {line}: {e}", sc.name));
                assert_eq!(&back, s, "{}: {line}", sc.name);
            }
        }
    }

    #[test]
    fn sessions_stay_on_existing_nodes() {
        for sc in all() {
            assert!(sc.placement.values().all(|n| *n < sc.nodes), "{}: placement beyond nodes", sc.name);
            for s in &sc.steps {
                if let Step::Connect { node: Some(n), .. } | Step::Resume { node: Some(n), .. } = s {
                    assert!(*n < sc.nodes, "{}: node {n} beyond nodes", sc.name);
                }
            }
        }
    }
}
