#!/usr/bin/env bash
# Installs what the external-peer tests in tests/ need, on a fresh Debian 12
# machine as root, and does nothing (quietly) when it is all already there:
#
#   * Debian's Apache ZooKeeper 3.8 (`zookeeper`) as the reference server, and
#     `zookeeper-bin` for the C client CLI `cli_mt`;
#   * Apache Curator's recipes (`libcurator-recipes-java`) and a JDK, for the
#     Curator recipe test, and Curator's test utilities (`libcurator-test-java`),
#     whose TestingCluster `bench --cluster` times (cli/tests/bench_cli.rs);
#   * JUnit 5 (`junit5`, with its console launcher), for the Java helper's test
#     (clients/java, tests/tests/java_helper.rs);
#   * curl, which the docs' HTTP examples use (tests/tests/docs_commands.rs runs them);
#   * a Python virtualenv with kazoo (whose shipped test suite we run against
#     both servers) and its `test` extras: pytest, pytest-timeout (per-test
#     time limit, so a hung test cannot stall CI), pytest-cov, objgraph
#     (imported by kazoo's test_cache), gevent and eventlet (without them the
#     168 handler tests skip), pyjks and pyopenssl (imported by kazoo's harness),
#     and wheel, with which tests/tests/pytest_fixture.rs pip-installs
#     clients/python offline (--no-build-isolation).
#
# The venv lives at ${TESTKEEPER_VENV:-<repo>/target/test-venv}; the Rust test
# support (tests/src/env.rs) uses the same default, so keep the two in sync.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TESTKEEPER_VENV:-$REPO/target/test-venv}"

# libcurator-recipes-java (with its framework and client) and a JDK for javac:
# tests/tests/curator_recipes.rs compiles tests/java/CuratorRecipes.java.
# iproute2: `ip netns` for tests/tests/partition_heal.rs (root only).
APT_PACKAGES=(zookeeper zookeeper-bin libcurator-recipes-java libcurator-test-java default-jdk-headless junit5 curl iproute2)
# PyPI requirements. kazoo is pinned because the suite runner leans on its
# test harness internals (kazoo.testing.harness.get_global_cluster), which
# are not a public API; bump deliberately and re-check run_kazoo_suite.py.
# gevent and eventlet are pinned too: their monkey-patching is what the handler
# tests exercise, and a new major version can change it.
PY_REQUIREMENTS=(kazoo==2.11.0 wheel pytest pytest-timeout pytest-cov objgraph gevent==26.9.0 eventlet==0.41.3 pyjks pyopenssl)

log() { echo "install-test-deps: $*" >&2; }

apt_updated=0
apt_install() {
    # `apt-get update` is slow and needs the network, so only pay for it
    # when something is actually missing, and at most once per run.
    if [ "$apt_updated" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        apt_updated=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    is_installed "$pkg" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt_install "${missing[@]}"
fi

# Debian ships the ZooKeeper JVM bits without a JRE pinned beyond default-jre;
# fail here with a clear message rather than later inside a test.
if [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null; then
    log "ZooKeeper or java still missing after install; see apt output above"
    exit 1
fi

# Pick the interpreter for the venv. Debian's own python3 needs python3-venv
# for `-m venv` to work (ensurepip is split out), so install it if needed.
PYTHON="${TESTKEEPER_PYTHON:-$(command -v python3 || true)}"
if [ -z "$PYTHON" ]; then
    apt_install python3 python3-venv
    PYTHON=/usr/bin/python3
fi
if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
        apt_install python3-venv
    fi
    log "creating virtualenv at $VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi

# Ask the venv which requirements are unmet: a bare name must be installed,
# `name==version` must be installed at exactly that version.
unmet() {
    "$VENV/bin/python" - "$@" <<'PY'
import sys
from importlib import metadata
for req in sys.argv[1:]:
    name, _, want = req.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have is None or (want and have != want):
        print(req)
PY
}
mapfile -t need < <(unmet "${PY_REQUIREMENTS[@]}")
if [ "${#need[@]}" -gt 0 ]; then
    log "pip install ${need[*]}"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${need[@]}"
fi

# ---------------------------------------------------------------------------
# ClickHouse (tests/tests/clickhouse_chdb.rs, tests/tests/clickhouse_server.rs;
# see docs/clickhouse.md). Separate section, same rules: quiet, idempotent.
#   * Debian's clickhouse-server/clickhouse-client 18.16 (run in the
#     foreground by the test; the package's service is never started);
#   * chdb (ClickHouse 26.x in-process) in the same venv, pinned with the
#     chdb-core it pulls in: the tests assert which Keeper operations that
#     ClickHouse version sends, so bump deliberately.
# ---------------------------------------------------------------------------
CH_APT_PACKAGES=(clickhouse-server clickhouse-client)
CH_PY_REQUIREMENTS=(chdb==4.4.0 chdb-core==26.9.0)
ch_missing=()
for pkg in "${CH_APT_PACKAGES[@]}"; do
    is_installed "$pkg" || ch_missing+=("$pkg")
done
if [ "${#ch_missing[@]}" -gt 0 ]; then
    apt_install "${ch_missing[@]}"
fi
mapfile -t ch_need < <(unmet "${CH_PY_REQUIREMENTS[@]}")
if [ "${#ch_need[@]}" -gt 0 ]; then
    log "pip install ${ch_need[*]}"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${ch_need[@]}"
fi

# ---------------------------------------------------------------------------
# The dashboard's browser test (tests/tests/dashboard_browser.rs): Debian's
# headless-capable chromium, driven over CDP on a pipe; nothing is downloaded
# by the test itself. Same rules: quiet, idempotent.
# ---------------------------------------------------------------------------
if ! is_installed chromium; then
    apt_install chromium
fi
