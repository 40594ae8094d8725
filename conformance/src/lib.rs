//! Conformance suite (issue 5): not started yet; this crate is a placeholder in the workspace layout.
