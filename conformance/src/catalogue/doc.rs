//! The catalogue section of `docs/conformance.md`, generated from the scenario files, and the
//! test that fails when the doc is stale (`TESTKEEPER_BLESS=1` rewrites it).

use std::fmt::Write as _;

use super::{all, FILES};

/// The line before the generated section.
pub const DOC_BEGIN: &str = "<!-- catalogue: generated from conformance/scenarios by `TESTKEEPER_BLESS=1 cargo test -p testkeeper-conformance catalogue`; do not edit -->";
/// The line after it.
pub const DOC_END: &str = "<!-- end of catalogue -->";

/// The generated Markdown: one table per scenario file, headed by the file's first comment.
pub fn catalogue_markdown() -> String {
    let scenarios = all();
    let mut out = format!("{} scenarios in {} files.\n", scenarios.len(), FILES.len());
    for (file, text) in FILES {
        let title = text.lines().next().and_then(|l| l.strip_prefix("# ")).unwrap_or(file);
        let _ = write!(out, "\n### `{file}`: {title}\n\n| scenario | what it checks | source |\n|---|---|---|\n");
        for sc in scenarios.iter().filter(|s| s.file == *file) {
            let mut tags = Vec::new();
            if sc.nodes > 1 {
                tags.push(format!("{} nodes", sc.nodes));
            }
            if sc.keeper_only() {
                tags.push("Keeper-only".to_string());
            }
            if sc.read_only() {
                tags.push("read-only".to_string());
            }
            let tags = if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) };
            let cell = |s: &str| s.replace('|', "\\|");
            let _ = writeln!(out, "| `{}`{tags} | {} | {} |", sc.name, cell(&sc.about), cell(&sc.source));
        }
    }
    out.push_str(
        "\n### Known differences (`conformance/src/expected.rs`)\n\nApplied only when the target's and the \
         reference's flavors differ; the proxy's cross-check applies the entries that name no scenario.\n\n\
         | id | difference | where | source |\n|---|---|---|---|\n",
    );
    for d in crate::expected::TABLE {
        let mut at = Vec::new();
        if !d.scenarios.is_empty() {
            at.push(format!("scenarios {}", d.scenarios.join(", ")));
        }
        if !d.ops.is_empty() {
            at.push(format!("ops {}", d.ops.join(", ")));
        }
        if !d.paths.is_empty() {
            at.push(format!("paths {}", d.paths.join(", ")));
        }
        at.push(format!("keys {}", d.keys.join(", ")));
        let _ = writeln!(out, "| `{}` | {} | {} | {} |", d.id, d.what.replace('|', "\\|"), at.join("; "), d.source);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_section_of_the_doc_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance.md");
        let doc = std::fs::read_to_string(path).expect("docs/conformance.md");
        let (head, rest) = doc.split_once(DOC_BEGIN).expect("docs/conformance.md lacks the catalogue begin marker");
        let (section, tail) = rest.split_once(DOC_END).expect("docs/conformance.md lacks the catalogue end marker");
        let want = format!("\n{}", catalogue_markdown());
        if section == want {
            return;
        }
        if std::env::var("TESTKEEPER_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(path, format!("{head}{DOC_BEGIN}{want}{DOC_END}{tail}")).expect("rewriting the doc");
            return;
        }
        panic!(
            "docs/conformance.md's catalogue is stale: run \
             `TESTKEEPER_BLESS=1 cargo test -p testkeeper-conformance catalogue` and commit the doc"
        );
    }
}
