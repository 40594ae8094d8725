"""kazoo against a 3-node cluster across a leader failover (tests/tests/cluster_processes.rs).

N creates, then "phase1 session=0x.." on stdout; the test kills the leader and writes "go" on
stdin; N more creates through whatever server kazoo reaches, each retried until it is known to
be applied (a lost reply may have applied it); then "phase2 session=0x.. retries=R",
"children=C" and "ok".

Servers are tried in the connect string's order (randomize_hosts=False), so the test can put the
leader first and know kazoo's own server dies.

Usage: python cluster_failover.py CONNECT_STRING N
"""

import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.retry import KazooRetry

hosts, n = sys.argv[1], int(sys.argv[2])
retries = 0


def count_retry(*_args):
    global retries
    retries += 1


retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5, deadline=60)
zk = KazooClient(
    hosts=hosts,
    timeout=10,
    randomize_hosts=False,
    connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5),
)
zk.start(timeout=30)


def create(path):
    attempts = [0]

    def once():
        attempts[0] += 1
        if attempts[0] > 1:
            count_retry()
        try:
            zk.create(path, b"")
        except NodeExistsError:
            if attempts[0] == 1:
                raise
            # An earlier attempt whose reply was lost did apply it.

    retry(once)


create("/kf")
for i in range(n):
    create("/kf/a-%d" % i)
print("phase1 session=0x%x" % zk.client_id[0], flush=True)
line = sys.stdin.readline().strip()
assert line == "go", "expected 'go' on stdin, got %r" % line
for i in range(n):
    create("/kf/b-%d" % i)
print("phase2 session=0x%x retries=%d" % (zk.client_id[0], retries))
print("children=%d" % len(retry(zk.get_children, "/kf")))
zk.stop()
print("ok", flush=True)
