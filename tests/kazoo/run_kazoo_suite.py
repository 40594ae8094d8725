#!/usr/bin/env python3
"""Run kazoo's own shipped test suite (kazoo/tests) against an external server.

kazoo's harness (kazoo/testing/harness.py) normally builds and launches a
3-node ZooKeeper cluster of its own through get_global_cluster(). We replace
that function with one returning a stand-in "cluster" whose members report the
address given with --hosts, so every KazooTestCase talks to the server under
test instead (real ZooKeeper or testkeeper). Tests that need to stop/restart
servers, more than one node, SASL, TLS or reconfig cannot work against a
single external server and are deselected via EXCLUDED below.

Writes a JSON object {test_id: outcome} to --json, where outcome is one of
passed, failed, error (setup/teardown failed), timeout, skipped, xfailed,
xpassed, excluded. Exit code: 0 if the suite ran (whatever the test outcomes),
2 on usage/infrastructure errors; the caller compares outcomes itself.

Usage:
    run_kazoo_suite.py --hosts 127.0.0.1:2181 --json out.json
        [--timeout SECONDS] [-k EXPR] [--list-excluded] [-- extra pytest args]
"""

import argparse
import importlib.util
import json
import os
import sys
import time
import types

# (test id prefix, reason). A prefix matches a whole module, a class, or one
# test; it is matched against both the collected id and the id of the class
# that *defines* the test, so subclasses (e.g. the gevent/eventlet re-runs of
# TestClient) inherit the exclusion. Keep this the single source of truth.
EXCLUDED = [
    ("test_sasl.py", "SASL needs a JAAS-configured server started by the harness"),
    ("test_client.py::TestSSLClient", "TLS needs the harness-generated keystore"),
    ("test_client.py::TestReconfig", "dynamic reconfig needs a quorum + super digest"),
    ("test_client.py::TestClient::test_update_host_list", "stops cluster[0]"),
    ("test_client.py::TestClient::test_request_queuing_session_recovered", "stops/restarts the server"),
    ("test_client.py::TestClient::test_request_queuing_session_expired", "stops/restarts the server"),
    ("test_connection.py::TestReadOnlyMode", "stops 2 of 3 nodes to force read-only mode"),
    ("test_build.py", "checks $ZOOKEEPER_VERSION of the harness-built cluster"),
]

# Environment that changes kazoo's test behaviour: util.py reads CI and
# ZOOKEEPER_VERSION (CI=true makes tests sleep and pin the server version),
# and the harness reads ZOOKEEPER_*. CI sets CI=true, so drop them to get the
# same run locally and in CI.
_SCRUB_ENV = ("CI", "ZOOKEEPER_VERSION", "ZOOKEEPER_PATH", "ZOOKEEPER_CLASSPATH")


def _strip_id(nodeid):
    """Normalise a pytest node id to 'test_x.py::Class::test' (rootdir-free)."""
    marker = "kazoo/tests/"
    i = nodeid.find(marker)
    return nodeid[i + len(marker):] if i >= 0 else nodeid


def _matches(test_id, prefix):
    return test_id == prefix or test_id.startswith(prefix + "::")


def _defining_id(item):
    """Id of the test as written in its defining class ('test_client.py::TestClient::t')."""
    fn = getattr(item, "function", None) or getattr(item, "obj", None)
    mod = getattr(fn, "__module__", "") or ""
    qual = getattr(fn, "__qualname__", "") or ""
    if not mod.startswith("kazoo.tests.") or "." not in qual:
        return None
    return mod.rsplit(".", 1)[1] + ".py::" + qual.replace(".", "::")


def exclusion_reason(item_id, defining_id):
    for prefix, reason in EXCLUDED:
        if _matches(item_id, prefix) or (defining_id and _matches(defining_id, prefix)):
            return reason
    return None


class ExternalServer:
    """Stands in for kazoo.testing.common.ManagedZooKeeper."""

    running = True

    def __init__(self, address):
        self.address = address
        self.secure_address = address

    def run(self):
        pass

    def stop(self):
        # Reaching this means a test that stops servers was not excluded.
        raise RuntimeError("external server cannot be stopped; add test to EXCLUDED")

    def get_logs(self):
        return []


class ExternalCluster(list):
    """Stands in for kazoo.testing.common.ZookeeperCluster: nothing to manage."""

    def start(self):
        pass

    def stop(self):
        pass

    def terminate(self):
        # KazooTestCase.tearDownClass terminates the cluster after every class;
        # for a real harness cluster that means a full restart, here nothing.
        pass

    def reset(self):
        pass

    def get_logs(self, num_lines=100):
        return []

    def get_ssl_client_configuration(self):
        raise RuntimeError("no TLS on the external server; add test to EXCLUDED")


def _install_fake_cluster(hosts):
    # kazoo.testing.common imports OpenSSL and jks (pyopenssl, pyjks) only to
    # build keystores for its own cluster; we never build one, so stub them
    # rather than pull in heavy native dependencies.
    for name in ("OpenSSL", "jks"):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    from kazoo.testing import harness

    cluster = ExternalCluster(ExternalServer(h.strip()) for h in hosts.split(","))
    harness.get_global_cluster = lambda: cluster


def _bound_test_thread_joins(limit):
    """Makes a test's unbounded join of one of its own daemon threads give up after `limit`.

    KazooLockTests and TestSemaphore join every thread they made in tearDown, with no timeout.
    When a test body fails (its pytest-timeout included) while one of those threads holds a
    lock and waits for an event the body would have set, that join never returns, pytest-
    timeout has already fired, and the whole run hangs until the caller's deadline kills it
    (seen once in CI, in test_rw_lock). Past `limit` the join returns and the thread (a daemon)
    is left behind; the test has failed already, so its outcome stands.
    """
    import threading

    original = threading.Thread.join

    def join(self, timeout=None):
        bounded = timeout is None and self.daemon and threading.current_thread() is threading.main_thread()
        original(self, limit if bounded else timeout)
        if bounded and self.is_alive():
            print(f"run_kazoo_suite: thread {self.name} still running {limit:.0f} s after a "
                  "test's join; left behind", file=sys.stderr, flush=True)

    threading.Thread.join = join


class OutcomePlugin:
    """Collects one outcome per test and writes the JSON file at the end."""

    def __init__(self, json_path):
        self.json_path = json_path
        self.outcomes = {}

    def pytest_collection_modifyitems(self, config, items):
        keep, dropped = [], []
        for item in items:
            test_id = _strip_id(item.nodeid)
            if exclusion_reason(test_id, _defining_id(item)):
                self.outcomes[test_id] = "excluded"
                dropped.append(item)
            else:
                keep.append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    def pytest_runtest_logreport(self, report):
        test_id = _strip_id(report.nodeid)
        prev = self.outcomes.get(test_id)
        if report.when == "call" or prev is None:
            outcome = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif report.failed:
                text = str(report.longrepr) if report.longrepr else ""
                if "Timeout (>" in text or "Failed: Timeout" in text:
                    outcome = "timeout"
                elif report.when != "call":
                    outcome = "error"
            self.outcomes[test_id] = outcome
        elif report.failed and prev in ("passed", "skipped"):
            # A failing teardown spoils an otherwise good result.
            self.outcomes[test_id] = "error"
        if report.when == "teardown":
            # Rewritten after every test so that a run killed by the caller's
            # overall deadline still leaves the outcomes it got to.
            self.write()

    def write(self):
        tmp = self.json_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(sorted(self.outcomes.items())), f, indent=1)
            f.write("\n")
        os.replace(tmp, self.json_path)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", help="server address(es), e.g. 127.0.0.1:2181")
    parser.add_argument("--json", help="where to write {test_id: outcome}")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-test limit (s)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("--list-excluded", action="store_true")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)

    if args.list_excluded:
        for prefix, reason in EXCLUDED:
            print(f"{prefix}\t{reason}")
        return 0
    if not args.hosts or not args.json:
        parser.error("--hosts and --json are required")

    for var in _SCRUB_ENV:
        os.environ.pop(var, None)
    missing = [m for m in ("pytest", "pytest_timeout", "kazoo") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"run_kazoo_suite: missing Python packages: {missing}; "
              "run scripts/install-test-deps.sh", file=sys.stderr)
        return 2
    import pytest
    import kazoo
    _install_fake_cluster(args.hosts)
    _bound_test_thread_joins(args.timeout)

    plugin = OutcomePlugin(args.json)
    plugin.write()  # an empty result file exists even if collection fails
    pytest_argv = [
        "--pyargs", "kazoo.tests",
        # kazoo lives in site-packages: keep pytest from writing a cache there
        # or picking up a rootdir/config file from our repo.
        "-p", "no:cacheprovider",
        "--rootdir", os.path.dirname(os.path.dirname(kazoo.__file__)),
        "-c", os.devnull,
        # signal method: the test fails with a traceback and the run goes on
        # (the thread method would os._exit the whole run).
        "--timeout", str(args.timeout),
        "--timeout-method", "signal",
        "-q", "-rfE", "--tb=short",
        "-o", "log_level=WARNING",
    ]
    if args.keyword:
        pytest_argv += ["-k", args.keyword]
    pytest_argv += args.pytest_args

    started = time.monotonic()
    code = pytest.main(pytest_argv, plugins=[plugin])
    elapsed = time.monotonic() - started
    plugin.write()

    counts = {}
    for outcome in plugin.outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    print(f"run_kazoo_suite: {args.hosts}: {summary} in {elapsed:.1f}s -> {args.json}")
    # 0 = all passed, 1 = some failed: both mean the suite ran. 5 = nothing
    # collected, anything else (interrupted, internal/usage error) is ours.
    return 0 if code in (0, 1) else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
