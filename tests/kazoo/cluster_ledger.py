"""kazoo writing a ledger to a 3-node cluster while the test kills and restarts the leader in a
loop (tests/tests/cluster_clients.rs, through tests/src/ledger.rs).

The client holds one ephemeral, then creates /ledger/w-NNNNNN with data "vN" one after another
until the test writes "stop" on stdin. Each create is retried through connection losses and
timeouts until its outcome is known: OK, or NODEEXISTS after an earlier attempt whose reply was
lost (then that attempt applied it; nobody else writes these paths). Every write the client
finishes is therefore acknowledged, and the test checks each one on every node.

stdout, one line each:
  start session=0x..                         once connected, the ephemeral made
  acked N                                    after every write (the test paces its kills on it)
  state S session=0x..                       every connection state change kazoo reports
  final session=0x.. acked=N retries=R       after "stop"
  ack PATH DATA                              one per acknowledged write
  mark N                                     echoed when "mark N" arrives on stdin
  ready                                      the session is still open: the test checks
                                             every node, then writes "close" on stdin
  ok                                         the session closed

Servers are tried in the connect string's order (randomize_hosts=False): the test orders them
from its printed seed.

Usage: python cluster_ledger.py CONNECT_STRING
"""

import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.retry import KazooRetry

hosts = sys.argv[1]
out_lock = threading.Lock()
stop = threading.Event()
close = threading.Event()


def say(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def watch_stdin():
    for line in sys.stdin:
        word = line.strip()
        if word.startswith("mark "):
            say(word)  # everything printed before this was printed before the test's step
        elif word == "stop":
            stop.set()
        elif word == "close":
            close.set()
            return
    stop.set()
    close.set()


zk = KazooClient(
    hosts=hosts,
    timeout=10,
    randomize_hosts=False,
    connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5),
)
zk.add_listener(lambda state: say("state %s session=0x%x" % (state, (zk.client_id or (0,))[0])))
zk.start(timeout=30)
retries = 0
# No deadline of its own: the test bounds the whole run.
retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5)


def create(path, data, ephemeral=False):
    """Creates path; True once known applied. Raises on anything but a lost outcome."""
    global retries
    attempts = [0]

    def once():
        global retries
        attempts[0] += 1
        if attempts[0] > 1:
            retries += 1
        try:
            zk.create(path, data, ephemeral=ephemeral)
        except NodeExistsError:
            if attempts[0] == 1:
                raise
            # An earlier attempt whose reply was lost did apply it.

    retry(once)


retry(zk.ensure_path, "/ledger")
session = zk.client_id[0]
create("/ledger-eph-%x" % session, b"mine", ephemeral=True)
say("start session=0x%x" % session)
threading.Thread(target=watch_stdin, daemon=True).start()
ledger = []
while not stop.is_set():
    n = len(ledger) + 1
    path, data = "/ledger/w-%06d" % n, b"v%d" % n
    create(path, data)
    ledger.append((path, data))
    say("acked %d" % n)
say("final session=0x%x acked=%d retries=%d" % (zk.client_id[0], len(ledger), retries))
for path, data in ledger:
    say("ack %s %s" % (path, data.decode()))
say("ready")
close.wait()
zk.stop()
zk.close()
say("ok")
