#!/usr/bin/env python3
"""Point kezhuw/zookeeper-client-rust's own integration suite (tests/zookeeper.rs of the
crate zookeeper-client 0.11.2) at testkeeper instead of Docker containers.

Only the harness changes: `struct Cluster` and `impl Cluster` are replaced by harness.rs,
which runs one `testkeeper serve` per cluster, and the Docker image builder and
testcontainers imports go (the published crate has no testcontainers: it is a git
dependency). No test body is touched. The file's hash is
checked first, so a different release of the suite is refused rather than patched blind.

usage: patch.py CRATE_DIR
"""
import hashlib
import pathlib
import sys

SUITE_SHA256 = "6c51bcac7be1b9ea7ffe4b89b9cce90241cc3c76ada74329ed386bca672c2c28"


def cut(lines, start, end):
    """Index range [i, j) from the line equal to `start` to the next line equal to `end`."""
    i = lines.index(start)
    j = lines.index(end, i + 1)
    return i, j


def main():
    crate = pathlib.Path(sys.argv[1])
    suite = crate / "tests" / "zookeeper.rs"
    text = suite.read_text()
    if "testkeeper harness" in text:
        return
    digest = hashlib.sha256(text.encode()).hexdigest()
    if digest != SUITE_SHA256:
        sys.exit(f"{suite}: sha256 {digest} is not the 0.11.2 suite this patch was written for")
    harness = (pathlib.Path(__file__).parent / "harness.rs").read_text().splitlines()
    lines = text.splitlines()
    # testcontainers is a git dependency that the published crate leaves out; its three
    # imports and the image builder go with the harness that used them. Later cuts first,
    # so the earlier indexes stay valid.
    i, j = cut(lines, "impl Cluster {", "#[rstest]")
    lines[i:j] = []
    i, j = cut(lines, "struct Cluster {", "struct ContainerOptions<'a> {")
    lines[i:j] = harness + [""]
    i, j = cut(lines, "fn zookeeper_image<'a>(options: ContainerOptions<'a>) -> RunnableImage<GenericImage> {",
               "async fn example() {")
    lines[i:j] = []
    lines = [line for line in lines if not line.startswith("use testcontainers::")]
    # The whole package is built on its own, outside testkeeper's workspace.
    manifest = crate / "Cargo.toml"
    toml = manifest.read_text()
    if "\n[workspace]" not in toml:
        manifest.write_text(toml + "\n[workspace]\n")
    suite.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
