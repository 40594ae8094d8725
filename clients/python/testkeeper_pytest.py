"""pytest fixtures for testkeeper: a real `testkeeper serve` process per test session, reset
between tests, with its admin endpoint at hand (expire sessions, drop connections, fault
rules, events) and its log lines readable.

Use it from a conftest.py (this file on sys.path, e.g. PYTHONPATH=clients/python)::

    pytest_plugins = ["testkeeper_pytest"]

    def test_my_client(zk, testkeeper):          # zk: a started KazooClient
        zk.create("/app/lock", ephemeral=True, makepath=True)
        testkeeper.expire_session(zk.client_id[0])
        ...

The binary is `--testkeeper-bin`, else $TESTKEEPER_BIN, else `testkeeper` on PATH; the
flavor is `--testkeeper-flavor` (default keeper). Only the standard library is needed, and
kazoo for the `zk` fixture.
"""

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

LISTENING = "testkeeper listening on "
HTTP_LISTENING = "testkeeper http listening on "


class AdminError(Exception):
    """The admin endpoint answered with an error status."""

    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class TestKeeper:
    """A `testkeeper serve --listen 127.0.0.1:0 --http 127.0.0.1:0` child process."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self, binary=None, flavor="keeper", args=(), env=None, startup_timeout=30):
        self.binary = binary or os.environ.get("TESTKEEPER_BIN") or shutil.which("testkeeper")
        if not self.binary:
            raise RuntimeError("no testkeeper binary: pass --testkeeper-bin, set TESTKEEPER_BIN or put it on PATH")
        cmd = [self.binary, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--flavor", flavor, *args]
        self._lines = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        # The contract: exactly one stdout line once it accepts connections.
        line = self.proc.stdout.readline()
        if not line.startswith(LISTENING):
            self.close()
            raise RuntimeError(f"testkeeper did not start: {line!r}; log:\n" + "\n".join(self._lines))
        self.hosts = line[len(LISTENING):].strip()
        http = threading.Event()
        self.admin = None

        def drain():
            # Kept whole, so a test can read what the server logged; drained, so a chatty
            # server never blocks on a full pipe.
            for raw in self.proc.stderr:
                raw = raw.rstrip("\n")
                with self._lock:
                    self._lines.append(raw)
                if raw.startswith(HTTP_LISTENING):
                    self.admin = "http://" + raw[len(HTTP_LISTENING):].strip()
                    http.set()

        threading.Thread(target=drain, daemon=True).start()
        if not http.wait(startup_timeout):
            self.close()
            raise RuntimeError("testkeeper printed no admin endpoint line")

    # --- the admin endpoint -------------------------------------------------------------

    def _call(self, method, path, body=None):
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body)).encode()
        req = urllib.request.Request(self.admin + path, data=data, method=method)
        # JSON bodies pass the endpoint's cross-site guard; X-Testkeeper does for the rest.
        req.add_header("Content-Type", "application/json")
        req.add_header("X-Testkeeper", "1")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as e:
            raise AdminError(e.code, e.read().decode().strip()) from None
        return json.loads(text) if text.strip() else None

    def sessions(self):
        """The live sessions: dicts with id ("0x..."), timeout_ms, connection, ephemerals..."""
        return self._call("GET", "/api/v1/sessions")["sessions"]

    def connections(self):
        return self._call("GET", "/api/v1/connections")["connections"]

    def expire_session(self, session_id):
        """Expires a session now, as its timeout would (an int, as kazoo's client_id[0], or "0x...")."""
        sid = session_id if isinstance(session_id, str) else hex(session_id & 0xFFFFFFFFFFFFFFFF)
        return self._call("POST", f"/api/v1/sessions/{sid}/expire", "")

    def drop_connection(self, connection_id):
        """Closes a connection as a dropped link would; its session lives on."""
        self._call("DELETE", f"/api/v1/connections/{connection_id}")

    def add_fault(self, rule):
        """Installs a rule, as text ("delay:ms=100,op=getData") or a dict ({"kind": "delay", "ms": 100}); returns its id."""
        return self._call("POST", "/api/v1/faults", rule if isinstance(rule, dict) else {"rule": rule})["id"]

    def faults(self):
        return self._call("GET", "/api/v1/faults")["rules"]

    def remove_fault(self, rule_id):
        self._call("DELETE", f"/api/v1/faults/{rule_id}")

    def clear_faults(self):
        self._call("DELETE", "/api/v1/faults")

    def events(self, since=None):
        """The fired faults (dicts with seq, kind, op, path, session, xid, zxid, time_ms...)."""
        path = "/api/v1/faults/events" + ("" if since is None else f"?since={since}")
        return self._call("GET", path)["events"]

    def reset(self):
        """An empty tree, no sessions, no fault rules: a fresh server on the same address."""
        return self._call("POST", "/api/v1/reset", "")

    # --- the log ------------------------------------------------------------------------

    def log(self):
        """Every stderr line so far."""
        with self._lock:
            return list(self._lines)

    def wait_for_log(self, *parts, timeout=10):
        """Waits for a log line containing every one of `parts`; returns it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in self.log():
                if all(p in line for p in parts):
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no log line with {parts!r} in:\n" + "\n".join(self.log()))

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def pytest_addoption(parser):
    group = parser.getgroup("testkeeper")
    group.addoption("--testkeeper-bin", default=None, help="the testkeeper binary (default: $TESTKEEPER_BIN, then PATH)")
    group.addoption("--testkeeper-flavor", default="keeper", choices=["keeper", "zookeeper"], help="server flavor")


@pytest.fixture(scope="session")
def testkeeper_server(request):
    """One testkeeper process for the whole test session."""
    server = TestKeeper(
        binary=request.config.getoption("--testkeeper-bin"),
        flavor=request.config.getoption("--testkeeper-flavor"),
        env={"RUST_LOG": os.environ.get("RUST_LOG", "info")},
    )
    yield server
    server.close()


@pytest.fixture
def testkeeper(testkeeper_server):
    """The session's server, reset before each test: empty tree, no sessions, no faults."""
    testkeeper_server.reset()
    return testkeeper_server


@pytest.fixture
def zk(testkeeper):
    """A started KazooClient connected to `testkeeper`, stopped after the test."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=testkeeper.hosts, timeout=10)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()
