"""The pytest fixture as a user meets it (tests/tests/pytest_fixture.rs runs this file in CI,
in both flavors): kazoo on a server that is reset between tests, a session expired over HTTP,
faults installed from Python, and what happened read back from the log."""

import threading

import pytest
from kazoo.client import KazooState
from kazoo.exceptions import ConnectionLoss


def test_a_creates(zk):
    zk.create("/left-behind", b"x")
    assert zk.exists("/left-behind")


def test_b_starts_from_an_empty_tree(zk, testkeeper):
    assert zk.exists("/left-behind") is None, "reset() runs before every test"
    assert len(testkeeper.sessions()) == 1


def test_expire_a_session_over_http(zk, testkeeper, request):
    zk.create("/lock", ephemeral=True)
    lost = threading.Event()
    zk.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
    session = zk.client_id[0]
    assert testkeeper.expire_session(session) == {"expired": hex(session)}
    assert testkeeper.wait_for_log("session expired", hex(session))
    if request.config.getoption("--testkeeper-flavor") == "zookeeper":
        # ZooKeeper tells a resuming client its session expired: kazoo reports LOST.
        assert lost.wait(15), "kazoo saw its session expire"
    probe = zk.retry(zk.exists, "/lock")
    assert probe is None, "the ephemeral went with its session"


def test_faults_from_python(zk, testkeeper):
    zk.create("/f", b"1")
    rule = testkeeper.add_fault({"kind": "error", "code": "CONNECTIONLOSS", "op": "getData", "path": "/f", "count": 1})
    with pytest.raises(ConnectionLoss):
        zk.get("/f")
    (event,) = testkeeper.events()
    assert (event["rule"], event["kind"], event["op"], event["path"]) == (rule, "error", "getData", "/f")
    assert event["session"] == hex(zk.client_id[0]) and event["time_ms"] > 0
    testkeeper.wait_for_log("fault fired", "kind=error")
    assert zk.get("/f")[0] == b"1", "count=1: the next read is answered"


def test_drop_a_connection(zk, testkeeper):
    (conn,) = testkeeper.connections()
    testkeeper.drop_connection(conn["id"])
    testkeeper.wait_for_log("connection dropped over HTTP")
    zk.retry(zk.create, "/after-drop", b"")  # kazoo reconnects and carries on
    assert zk.retry(zk.exists, "/after-drop")
