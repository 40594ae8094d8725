#!/usr/bin/env bash
# Runs kezhuw/zookeeper-client-rust's own integration suite (the crate zookeeper-client
# 0.11.2, tests/zookeeper.rs) against testkeeper's zookeeper flavor. The suite starts a Docker
# ZooKeeper 3.9.0 per test; tests/rust-client/patch.py swaps that harness for one
# `testkeeper serve` per test and leaves every test body as it is.
#
# usage: scripts/rust-client-suite.sh [--zookeeper-version 3.9|3.8.0] [--all] [--run-timeout S]
#                                     [LIBTEST ARGS...]
#   TESTKEEPER_BIN   the binary to test (default: build and use target/debug/testkeeper)
#   --all            run the tests that need what testkeeper has not (see SKIPPED) as well
#   --run-timeout S  stop the suite's run (not its build) after S seconds and exit 124; libtest
#                    has by then printed "test NAME has been running for over 60 seconds" for
#                    each test still waiting, so a hang names itself (default: no limit)
#
# Needs crates.io (through cargo) the first time, to fetch the crate and its dev-dependencies.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
crate=zookeeper-client-0.11.2
work=${RUST_CLIENT_SUITE_DIR:-$root/target/rust-client-suite}

# Tests that need a ZooKeeper testkeeper is not: an ensemble (read-only mode, reconfig), SASL
# enforced at connect. TLS and SASL tests are behind cargo features this run leaves off.
# docs/conformance.md lists each with its reason.
SKIPPED=(test_readonly test_update_ensemble test_auth_failed)

version=3.9
skip=1
run_timeout=
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --zookeeper-version) version=$2; shift 2 ;;
        --all) skip=0; shift ;;
        --run-timeout) run_timeout=$2; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done

if [ -z "${TESTKEEPER_BIN:-}" ]; then
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p testkeeper
    TESTKEEPER_BIN=$root/target/debug/testkeeper
fi

# Fetch the published crate through cargo (checksum checked against the index); the patch
# always starts from the published file.
mkdir -p "$work/fetch/src"
cat > "$work/fetch/Cargo.toml" <<TOML
[package]
name = "fetch-zookeeper-client"
version = "0.0.0"
edition = "2021"

[dependencies]
zookeeper-client = "=0.11.2"

[workspace]
TOML
touch "$work/fetch/src/lib.rs"
# Bounded, as the build below: a stalled registry fails this run instead of hanging it.
timeout 900 cargo fetch --quiet --manifest-path "$work/fetch/Cargo.toml"
file=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$crate.crate" | head -n 1)
# Unpacked and patched again only when the crate, the harness or the patch changed: a fresh
# copy has new mtimes, and cargo would rebuild the suite (half a minute) on every run.
stamp=$(cat "$file" "$root/tests/rust-client/harness.rs" "$root/tests/rust-client/patch.py" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$work/$crate.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -d "$work/$crate" ]; then
    rm -rf "${work:?}/$crate"
    tar xzf "$file" -C "$work"
    python3 "$root/tests/rust-client/patch.py" "$work/$crate"
    echo "$stamp" > "$work/$crate.stamp"
fi

skips=()
if [ "$skip" = 1 ]; then
    for t in "${SKIPPED[@]}"; do skips+=(--skip "$t"); done
fi
echo "rust-client-suite: $crate against $TESTKEEPER_BIN --zookeeper-version $version" >&2
export TESTKEEPER_BIN TESTKEEPER_ZOOKEEPER_VERSION=$version
suite=(cargo test --manifest-path "$work/$crate/Cargo.toml" --locked --test zookeeper)
export CARGO_TARGET_DIR="$work/target"
# Built first and apart, so that the run's limit counts the run alone.
timeout 1800 "${suite[@]}" --no-run --quiet
if [ -z "$run_timeout" ]; then
    exec "${suite[@]}" -- "${skips[@]}" "${args[@]}"
fi
# timeout(1) signals its whole process group: the test binary and the servers its harness
# started go with cargo.
status=0
timeout --kill-after=10 "$run_timeout" "${suite[@]}" -- "${skips[@]}" "${args[@]}" || status=$?
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "rust-client-suite: the run passed its ${run_timeout} s limit and was stopped" >&2
    exit 124
fi
exit "$status"
