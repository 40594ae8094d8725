"""A follower far behind (docs/cluster.md, "A follower far behind"): three `serve --peers
--raft-tcp-only` processes; `testkeeper bench` (4 sessions x 16 in flight, 1 KB values) and a
kazoo writer run against the leader; one follower is SIGSTOPped for STOP seconds, then
SIGCONTed, and for 20 s after it prints the longest gap between the writer's creates and each
node's raft role changes (from their logs). Extra arguments go to every `serve`; DIR in them
becomes the node's own directory, e.g. `--data-dir DIR`.

    $TESTKEEPER_VENV/bin/python scripts/lagging-follower.py target/release/testkeeper 30 [serve flags]

The nodes and the bench are this script's children, stopped by PID at the end."""
import os, signal, socket, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1]
STOP = float(sys.argv[2]) if len(sys.argv) > 2 else 30
EXTRA = sys.argv[3:]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def word(addr, w):
    host, port = addr.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=2)
        s.sendall(w.encode()); out = b""
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
        return out.decode()
    except OSError:
        return ""

def mntr(addr):
    d = {}
    for line in word(addr, "mntr").splitlines():
        k, _, v = line.partition("\t")
        d[k] = v
    return d

d = tempfile.mkdtemp()
peers = ",".join(f"{i}=127.0.0.1:{free_port()}" for i in (1, 2, 3))
procs, addrs = {}, {}
for i in (1, 2, 3):
    out = open(f"{d}/node{i}.out", "w"); err = open(f"{d}/node{i}.err", "w")
    args = [BIN, "serve", "--listen", "127.0.0.1:0", "--id", str(i), "--peers", peers, "--seed", "7", "--raft-tcp-only"] + [a.replace("DIR", f"{d}/data{i}") for a in EXTRA]
    procs[i] = subprocess.Popen(args, stdout=out, stderr=err)
try:
    for _ in range(100):
        for i in (1, 2, 3):
            for line in open(f"{d}/node{i}.out"):
                if line.startswith("testkeeper listening on "):
                    addrs[i] = line.split()[-1]
        if len(addrs) == 3: break
        time.sleep(0.1)
    leader = None
    for _ in range(100):
        st = {i: mntr(a).get("zk_server_state") for i, a in addrs.items()}
        ls = [i for i, s in st.items() if s == "leader"]
        if ls: leader = ls[0]; break
        time.sleep(0.1)
    f = [i for i in (1, 2, 3) if i != leader][0]
    healthy = [i for i in (1, 2, 3) if i != f]
    print(f"leader {leader}, stopping follower {f} for {STOP}s; logs in {d}", flush=True)
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=addrs[leader], timeout=30); zk.start()
    zk.ensure_path("/lag")
    stop = threading.Event(); gaps = []; count = [0]
    def writer():
        last = time.monotonic(); v = b"x" * 1000; n = 0
        while not stop.is_set():
            try:
                zk.create(f"/lag/n{n}", v); n += 1; count[0] = n
            except Exception as e:
                pass
            now = time.monotonic(); gaps.append((now - last, now)); last = now
    # a pipelined bulk loader as well, to pile up entries
    bulk = subprocess.Popen([BIN, "bench", "--target", addrs[leader], "--mix", "set=100", "--value-size", "1000", "--sessions", "4", "--pipeline", "16", "--ops", "2000000", "--rounds", "1", "--warmup", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = threading.Thread(target=writer); t.start()
    time.sleep(2)
    os.kill(procs[f].pid, signal.SIGSTOP)
    time.sleep(STOP)
    li = mntr(addrs[leader])
    print(f"before SIGCONT: leader last index {li.get('zk_last_log_idx', li.get('zk_zxid'))}, creates {count[0]}", flush=True)
    terms0 = {i: mntr(addrs[i]).get("zk_raft_term") for i in healthy}
    gaps.clear()
    os.kill(procs[f].pid, signal.SIGCONT)
    cont = time.monotonic()
    samples = []
    while time.monotonic() - cont < 20:
        samples.append((time.monotonic() - cont, {i: (mntr(addrs[i]).get("zk_server_state"),) for i in (1, 2, 3)}))
        time.sleep(0.2)
    bulk.kill(); stop.set(); t.join()
    worst = max(gaps, default=(0, 0))
    print(f"after SIGCONT: worst write gap {worst[0]*1000:.0f} ms at +{worst[1]-cont:.1f}s; creates {count[0]}")
    states = [s for _, s in samples]
    changes = sum(1 for a, b in zip(states, states[1:]) if a != b)
    print(f"state changes seen: {changes}")
    for i in (1, 2, 3):
        os.system(f"grep -c 'raft role changed' {d}/node{i}.err | sed 's/^/node{i} role changes: /'")
        os.system(f"grep 'raft role changed' {d}/node{i}.err | tail -4")
finally:
    for p in procs.values():
        try: os.kill(p.pid, signal.SIGCONT)
        except OSError: pass
        p.kill()
