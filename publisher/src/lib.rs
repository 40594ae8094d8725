//! Publisher of ADR 0067 (issue 8): not started yet; this crate is a placeholder in the workspace layout.
