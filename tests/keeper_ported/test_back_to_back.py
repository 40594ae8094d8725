"""The assertions of ClickHouse's tests/integration/test_keeper_back_to_back/test.py, ported:
every request goes to a real ZooKeeper ("genuine") and to testkeeper's keeper flavor ("fake")
through kazoo, and what the two answer must be the same. Upstream runs Keeper in Docker beside a
ZooKeeper container; here tests/tests/keeper_back_to_back.rs starts a Debian ZooKeeper and a
`testkeeper serve` and passes their addresses in GENUINE_HOSTS and FAKE_HOSTS.

Written for this repository from the upstream assertions; the code is not upstream's.
"""
import os
import random
import string
import threading
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, RolledBackError

SEED = int(os.environ.get("TESTKEEPER_SEED", random.randrange(1 << 32)))
print(f"back-to-back: seed {SEED} (replay with TESTKEEPER_SEED={SEED})")


def connect(hosts):
    zk = KazooClient(hosts=hosts, timeout=30.0)
    zk.start()
    return zk


@pytest.fixture
def both():
    clients = [connect(os.environ["GENUINE_HOSTS"]), connect(os.environ["FAKE_HOSTS"])]
    yield clients
    for zk in clients:
        zk.stop()
        zk.close()


def same_stats(a, b):
    for field in ("version", "cversion", "aversion", "dataLength", "numChildren"):
        assert getattr(a, field) == getattr(b, field), field


def test_simple_commands(both):
    for zk in both:
        zk.create("/simple", b"")
        zk.create("/simple/node", b"hello")
        zk.set("/simple/node", b"world")
    for zk in both:
        assert zk.exists("/simple") and zk.exists("/simple/node")
        assert zk.get("/simple/node")[0] == b"world"


def test_sequential_nodes(both):
    for zk in both:
        zk.create("/seq")
        for i in range(1, 11):
            zk.create("/seq/" + "a" * i + "-", sequence=True)
            zk.create("/seq/" + "b" * i)
    genuine, fake = (sorted(zk.get_children("/seq")) for zk in both)
    assert genuine == fake


def test_stats(both):
    genuine, fake = both
    for zk in both:
        zk.create("/stats")
    same_stats(genuine.exists("/stats"), fake.exists("/stats"))
    for zk in both:
        for i in range(1, 11):
            zk.create("/stats/" + "a" * i + "-", sequence=True)
            zk.create("/stats/" + "b" * i)
    same_stats(genuine.exists("/stats"), fake.exists("/stats"))
    for zk in both:
        for i in range(1, 11):
            zk.delete("/stats/" + "a" * i + "-" + "%010d" % ((i - 1) * 2))
            zk.delete("/stats/" + "b" * i)
    same_stats(genuine.exists("/stats"), fake.exists("/stats"))
    for zk in both:
        for i in range(100):
            zk.set("/stats", b"q" * i)
    same_stats(genuine.exists("/stats"), fake.exists("/stats"))


def wait_for(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_watchers(both):
    seen = [[], []]
    for i, zk in enumerate(both):
        zk.create("/watches")
        zk.get("/watches", watch=seen[i].append)
        zk.set("/watches", b"a")
    wait_for(lambda: all(seen))
    assert seen[0] == seen[1] and len(seen[0]) == 1, seen
    children = [[], []]
    for i, zk in enumerate(both):
        zk.get_children("/watches", watch=children[i].append)
        zk.create("/watches/child", b"b")
    wait_for(lambda: all(children))
    assert children[0] == children[1] and len(children[0]) == 1, children


def test_multitransactions(both):
    for zk in both:
        zk.create("/multi")
        t = zk.transaction()
        t.create("/multi/freddy")
        t.create("/multi/fred", ephemeral=True)
        t.create("/multi/smith", sequence=True)
        results = t.commit()
        assert len(results) == 3
        assert results[0] == "/multi/freddy"
        assert results[2].startswith("/multi/smith0")
    for zk in both:
        t = zk.transaction()
        t.create("/multi/q")
        t.delete("/multi/a")
        t.create("/multi/x")
        results = t.commit()
        assert isinstance(results[0], RolledBackError), results
        assert isinstance(results[1], NoNodeError), results
        for p in ("/multi/q", "/multi/a", "/multi/x"):
            assert zk.exists(p) is None


def random_name(rng):
    return "".join(rng.choices(string.ascii_lowercase + string.digits, k=3))


def random_requests(rng, rounds):
    """(name, path, value) triples: creates down random paths, sets, reads, deletes, reads."""
    out, paths = [], []
    for _ in range(rounds):
        for _ in range(100):
            path = "/random"
            for _ in range(1, rng.randint(0, 10)):
                path += "/" + random_name(rng)
                paths.append(path)
                out.append(("create", path, "".join(rng.choices(string.ascii_lowercase, k=10))))
        for _ in range(100):
            out.append(("set", rng.choice(paths), "".join(rng.choices(string.ascii_lowercase, k=10))))
        for _ in range(100):
            out.append((rng.choice(("exists", "get", "get_children")), rng.choice(paths), None))
        for _ in range(30):
            out.append(("delete", rng.choice(paths), None))
        for _ in range(100):
            out.append((rng.choice(("exists", "get", "get_children")), rng.choice(paths), None))
    return out


def run(zk, name, path, value):
    if name == "create":
        return zk.create(path, value.encode())
    if name == "set":
        zk.set(path, value.encode())
        return None
    if name == "exists":
        return zk.exists(path) is not None
    if name == "get":
        return zk.get(path)[0]
    if name == "get_children":
        return sorted(zk.get_children(path))
    zk.delete(path)
    return None


def test_random_requests(both):
    # Upstream generates the deletes but never runs them; here they run.
    requests = random_requests(random.Random(SEED), 10)
    for zk in both:
        zk.create("/random")
    for i, (name, path, value) in enumerate(requests):
        outcomes = []
        for zk in both:
            try:
                outcomes.append(("ok", run(zk, name, path, value)))
            except Exception as e:  # the kazoo exception class is what must agree
                outcomes.append(("error", type(e).__name__))
        assert outcomes[0] == outcomes[1], f"request {i} {name} {path} (seed {SEED}): {outcomes}"
    genuine, fake = (sorted(zk.get_children("/random")) for zk in both)
    assert genuine == fake


def test_end_of_session():
    events = [[], []]
    for i, hosts in enumerate((os.environ["GENUINE_HOSTS"], os.environ["FAKE_HOSTS"])):
        owner, watcher = connect(hosts), connect(hosts)
        try:
            owner.create("/end_of_session")
            owner.create("/end_of_session/ephemeral", ephemeral=True)
            assert watcher.exists("/end_of_session/ephemeral", watch=events[i].append) is not None
            owner.stop()
            owner.close()
            assert watcher.exists("/end_of_session/ephemeral") is None
            wait_for(lambda: events[i])
        finally:
            watcher.stop()
            watcher.close()
    assert events[0] == events[1] and len(events[0]) == 1, events


def test_end_of_watches_session():
    """A closed session's watches go with it: only the other session's two fire."""
    first, second = connect(os.environ["FAKE_HOSTS"]), connect(os.environ["FAKE_HOSTS"])
    fired = []
    try:
        first.create("/watches_end")
        for n in range(100):
            first.create(f"/watches_end/{n}")
            first.get_children(f"/watches_end/{n}", watch=fired.append)
        second.get_children("/watches_end/0", watch=fired.append)
        second.get_children("/watches_end/1", watch=fired.append)
        first.stop()
        first.close()
        for n in range(100):
            second.create(f"/watches_end/{n}/{n}", b"somebytes")
        wait_for(lambda: len(fired) >= 2)
        time.sleep(0.2)
        assert len(fired) == 2, fired
    finally:
        second.stop()
        second.close()


def test_concurrent_watches():
    """Ten threads create nodes, watch them and set them: every one of the 1000 watches fires."""
    zk = connect(os.environ["FAKE_HOSTS"])
    rng = random.Random(SEED)
    lock = threading.Lock()
    fired, created, live = [], [0], []
    try:
        zk.create("/concurrent")

        def make(i):
            path = f"/concurrent/{i}"
            zk.ensure_path(path)
            zk.get(path, watch=lambda e: fired.append(e.path))
            with lock:
                created[0] += 1
                live.append(i)

        def trigger():
            with lock:
                if not live:
                    return
                i = live.pop(rng.randrange(len(live)))
            zk.set(f"/concurrent/{i}", b"somevalue")

        def worker(total):
            for _ in range(total):
                with lock:
                    i = rng.randint(0, 1000)
                make(i)
                time.sleep(rng.random() * 0.01)
                trigger()
            while live:
                trigger()

        threads = [threading.Thread(target=worker, args=(100,)) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wait_for(lambda: len(fired) >= 1000)
        assert created[0] == 1000
        assert not live
        assert len(fired) == 1000, len(fired)
    finally:
        zk.stop()
        zk.close()
