#!/usr/bin/env python3
"""Regenerate docs/performance.md and docs/img/*.png: testkeeper vs Apache ZooKeeper 3.8.

Every figure is a ratio measured in this one run, on this machine: both servers are started
here (`testkeeper bench --spawn-testkeeper --spawn-zookeeper`: the release build of this
repo's binary, and Debian's ZooKeeper 3.8 with forceSync=no, each on a free loopback port),
and rounds alternate between them so a noisy machine hurts both alike.

Usage:
    scripts/bench-report.py [--quick] [--znodes N] [--no-profile] [--no-kazoo] [--no-java] [--no-watch-load]
                            [--no-durable] [--no-baseline] [--baseline-commit C | --baseline-bin BIN] [--start-znodes N]
                            [--no-cluster] [--cluster-only] [--launch-only] [--render-only] [--only-durability]

--quick runs fewer ops and rounds (a smoke run, ~2 minutes); the committed report is the
default run. --render-only rewrites the doc from the last run's files (after editing
scripts/bench-report-notes.md, say) without measuring again. --cluster-only runs just the
3-node cluster comparison (`bench --cluster`) and replaces its section in the existing doc;
--launch-only does the same for the start time (`bench --launches`, spawn to the first imok
against ZooKeeper, with testkeeper's own phases). The raw JSON of every run stays in
target/bench-report/.

Durability (issue 12): durable writes (`--durable`: testkeeper `--data-dir` with `--fsync always`
against ZooKeeper with `forceSync=yes`, both under the system temp directory, one disk) at 1 and 32
sessions; this build in memory against the release before the durable engine (commit
--baseline-commit, built from a `git worktree` in release mode, started side by side in each run),
every row of the matrix; start time with a --start-znodes snapshot against ZooKeeper loading the same
tree from its own snapshot, and how long testkeeper's snapshot of that tree holds the engine's lock.
--only-durability measures only these and rewrites only their sections of the committed doc (between
the "durability sections" markers), keeping the rest from the last full run; with --render-only it
rewrites them from the last run's files.

Two checks that use no code of ours on the client side: kazoo's own test suite timed
against each server (needs the venv of scripts/install-test-deps.sh, at $TESTKEEPER_VENV or
target/test-venv; --no-kazoo skips it), and a load generator on Apache ZooKeeper's Java
client (scripts/bench-java/LoadGen.java, compiled with javac; --no-java skips it), which also
runs the cluster comparison's workloads (`bench --cluster --java`).
"""

import argparse
import datetime
import json
import os
import platform
import re
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "target", "bench-report")
BIN = os.path.join(ROOT, "target", "release", "testkeeper")
DOC = os.path.join(ROOT, "docs", "performance.md")
IMG = os.path.join(ROOT, "docs", "img")
WRITE_MIX = "create=25,set=50,delete=25"
ZK_JAR = "/usr/share/java/zookeeper.jar"  # its manifest Class-Path brings netty and the rest
ZK_LOG_JARS = ["/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"]
VENV = os.environ.get("TESTKEEPER_VENV", os.path.join(ROOT, "target", "test-venv"))
KAZOO_SUITE = os.path.join(ROOT, "tests", "kazoo", "run_kazoo_suite.py")
LOADGEN_SRC = os.path.join(ROOT, "scripts", "bench-java", "LoadGen.java")
JAVA_SHAPES = [(8, 16), (1, 1)]  # (sessions, in flight per session) for the Java client
WARMUP_OPS = 40000  # unmeasured Java-client ops per server before its rounds
LAUNCHES = 15  # starts per server in the start-time section (`bench --launches`)
BASELINE_COMMIT = "5042493"  # the last commit before the durable engine (issue 12)
DURABLE_SHAPES = [(1, 1), (32, 1), (1, 16), (32, 16)]  # (sessions, in flight) for durable writes


def sh(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def bench(name, *args):
    """Runs `testkeeper bench ARGS --json OUT/name.json` and returns the parsed JSON."""
    path = os.path.join(OUT, name + ".json")
    sh([BIN, "bench", *map(str, args), "--json", path], env={**os.environ, "RUST_LOG": "warn"})
    with open(path) as f:
        return json.load(f)


class Serve:
    """`testkeeper serve` on a free port (port 0; the address is read from its stdout)."""

    def __init__(self, *flags):
        self.p = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", *flags], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "warn"}, text=True)
        line = self.p.stdout.readline()
        m = re.search(r"listening on (\S+)", line)
        if not m:
            self.stop()
            raise SystemExit(f"testkeeper serve did not start: {line!r}")
        self.addr = m.group(1)

    def stop(self):
        self.p.kill()  # our own child, by PID
        self.p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def four_letter_word(port, word):
    """Sends a four-letter word to 127.0.0.1:port and returns the answer ('' if none)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
            c.sendall(word.encode())
            out = b""
            while chunk := c.recv(4096):
                out += chunk
            return out.decode(errors="replace")
    except OSError:
        return ""


class ZooKeeper:
    """Debian's ZooKeeper 3.8 on a free port, started as cli/src/bench/spawn.rs does it: the JVM
    directly (so our PID is the server), a private conf dir first on the classpath, forceSync=no,
    -Xmx1000m. Ready once `ruok` says imok and `srvr` reports a Mode."""

    def __init__(self):
        with socket.socket() as probe:  # another process may take the port before the JVM binds it
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.dir = tempfile.mkdtemp(prefix="testkeeper-report-zk-")
        conf, data = os.path.join(self.dir, "conf"), os.path.join(self.dir, "data")
        os.makedirs(conf)
        os.makedirs(data)
        with open(os.path.join(conf, "zoo.cfg"), "w") as f:
            f.write(f"tickTime=2000\ndataDir={data}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                    "maxClientCnxns=0\nforceSync=no\n4lw.commands.whitelist=*\nadmin.enableServer=false\n")
        with open(os.path.join(conf, "log4j.properties"), "w") as f:
            f.write("log4j.rootLogger=WARN, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n"
                    "log4j.appender.FILE.File=zookeeper.log\n"
                    "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
                    "log4j.appender.FILE.layout.ConversionPattern=%d %-5p %m%n\n")
        cp = ":".join([conf, ZK_JAR] + [j for j in ZK_LOG_JARS if os.path.isfile(j)])
        self.p = subprocess.Popen(
            ["java", "-cp", cp, "-Xmx1000m", f"-Dlog4j.configuration=file:{conf}/log4j.properties",
             "-Dzookeeper.extendedTypesEnabled=true", "-Dfile.encoding=UTF-8", "-Djava.awt.headless=true",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", os.path.join(conf, "zoo.cfg")],
            cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addr = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while not (four_letter_word(port, "ruok") == "imok" and "Mode: " in four_letter_word(port, "srvr")):
            if self.p.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"ZooKeeper did not start on {self.addr}")
            time.sleep(0.05)

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()  # our own child, by PID
        self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def matrix(ops, rounds):
    """Throughput and p99 against ZooKeeper at several session counts, sync and pipelined."""
    runs = {}
    for pipeline in (1, 16):
        for sessions in (1, 4, 8, 32):
            name = f"vs-zk-s{sessions}-w{pipeline}"
            runs[(sessions, pipeline)] = bench(name, "--spawn-testkeeper", "--spawn-zookeeper", "--sessions",
                                               sessions, "--pipeline", pipeline, "--ops", ops, "--rounds", rounds)
    return runs


def build_baseline(commit):
    """The release binary of `commit`, built in a scratch `git worktree` with its own target directory
    (removed afterwards); cached as OUT/baseline-<commit>/testkeeper."""
    out_dir = os.path.join(OUT, f"baseline-{commit}")
    binary = os.path.join(out_dir, "testkeeper")
    if os.path.exists(binary):
        return binary
    scratch = tempfile.mkdtemp(prefix=f"testkeeper-baseline-{commit}-")
    tree, target = os.path.join(scratch, "tree"), os.path.join(scratch, "target")
    sh(["git", "-C", ROOT, "worktree", "add", "--detach", tree, commit])
    try:
        sh(["cargo", "build", "--release", "-q", "-p", "testkeeper"], cwd=tree,
           env={**os.environ, "CARGO_TARGET_DIR": target, "CARGO_INCREMENTAL": "0"})
        os.makedirs(out_dir, exist_ok=True)
        shutil.copy2(os.path.join(target, "release", "testkeeper"), binary)
    finally:
        sh(["git", "-C", ROOT, "worktree", "remove", "--force", tree])
        shutil.rmtree(scratch, ignore_errors=True)
    return binary


def baseline_matrix(binary, ops, rounds):
    """This build against the baseline binary, both in memory, every shape of the main matrix."""
    runs = {}
    for pipeline in (1, 16):
        for sessions in (1, 4, 8, 32):
            runs[(sessions, pipeline)] = bench(f"vs-baseline-s{sessions}-w{pipeline}", "--spawn-testkeeper",
                                               "--spawn-baseline", binary, "--sessions", sessions, "--pipeline",
                                               pipeline, "--ops", ops, "--rounds", rounds)
    return runs


def durable_matrix(ops, rounds):
    """Durable writes: testkeeper --data-dir --fsync always vs ZooKeeper forceSync=yes, write-only mix.
    A synchronous session waits for one flush per write, so those rows get fewer ops."""
    runs = {}
    for sessions, pipeline in DURABLE_SHAPES:
        n = ops // 10 if sessions * pipeline == 1 else ops // 2
        runs[(sessions, pipeline)] = bench(f"durable-s{sessions}-w{pipeline}", "--spawn-testkeeper", "--spawn-zookeeper",
                                           "--durable", "--mix", WRITE_MIX, "--sessions", sessions, "--pipeline",
                                           pipeline, "--ops", n, "--rounds", rounds)
    return runs


def start_with_snapshot(n, restarts):
    """Start time on an n-znode snapshot, and the snapshot's lock time (`bench --start-znodes`)."""
    return bench("start-snapshot", "--start-znodes", n, "--restarts", restarts)["start_with_snapshot"]


def digest_overhead(ops, rounds):
    """Digest on (spawned) vs off (a `serve --no-digest` started here), write-only mix."""
    off = Serve("--no-digest")
    try:
        return bench("digest-on-vs-off", "--spawn-testkeeper", "--vs", off.addr, "--sessions", 8, "--pipeline", 16,
                     "--ops", ops, "--rounds", rounds, "--mix", WRITE_MIX)
    finally:
        off.stop()


WATCH_WORKLOADS = [("fire", "firing N watches (N nodes watched by one session, set by another in multis of 1000; "
                   "first multi to N-th event)"),
                   ("expire", "a session holding N watched ephemerals closing (its close to the watcher's N-th "
                    "NodeDeleted)"),
                   ("set_watches", "one setWatches of N paths (send to reply)")]


def watch_load(n, rounds):
    """The three watch workloads of `testkeeper bench --watch-load` on a spawned pair."""
    return bench("watch-load", "--spawn-testkeeper", "--spawn-zookeeper", "--watch-load", n, "--rounds", rounds)


def watch_section(w):
    """Lines of the doc's section on the watch workloads (or why there is none)."""
    L = ["## Watch workloads\n"]
    if not w:
        return L + ["Not measured in this run (`--no-watch-load`).\n"]
    r = w["watch_load"]
    tk, zk = (next(t for t in r["targets"] if t["label"] == k) for k in ("testkeeper", "zookeeper"))
    L.append(f"`testkeeper bench --watch-load {r['watches']}` (`cli/src/bench/watch_load.rs`) on a spawned "
             f"testkeeper (keeper flavor) and ZooKeeper, {r['rounds']} round(s) each, alternating; ratios are "
             "medians of per-round ratios (testkeeper / ZooKeeper, lower is better). The target (issue 16): no "
             "more than a small multiple of ZooKeeper's time. Before the watch table kept its counts as it "
             "changed, each of these rescanned every watch per change: quadratic, tens of seconds to minutes.\n")
    L.append("| workload (N = %d) | testkeeper ms | ZooKeeper ms | ratio |" % r["watches"])
    L.append("|---|---:|---:|---:|")
    for key, what in WATCH_WORKLOADS:
        L.append(f"| {what} | {tk[key + '_ms_median']:.0f} | {zk[key + '_ms_median']:.0f} | "
                 f"**{fmt_ratio(r['vs'][key + '_ratio'])}** |")
    L.append("\nRaw rounds: `target/bench-report/watch-load.json`.\n")
    return L


CLUSTER_TITLE = "## A 3-node cluster vs a 3-server ZooKeeper ensemble"


def cluster_bench(ops, rounds, java=True):
    """`testkeeper bench --cluster`: both clusters spawned here, rounds alternating.

    Each workload is warmed with four rounds' worth of ops on each cluster (80000 in the full
    run), which ZooKeeper's JVMs need to compile their write path: after bench's default of a
    quarter round, the ensemble's writes at 32 sessions still rose over the measured rounds
    (6806 to 12370 ops/s in the first round's and the fourth's lines of a run's output), and
    the median ratio was taken against a half-warm ZooKeeper."""
    return bench("cluster", "--cluster", "--cluster-sessions", "1,32", "--ops", ops, "--rounds", rounds,
                 "--warmup", 4 * ops, "--failover-rounds", FAILOVER_ALONE, *(["--java"] if java else []))


# Leader kills of the testkeeper cluster alone after the paired ones, for the p99 of its write
# gap (about half a second each: the kill, the restart, the cluster whole again).
FAILOVER_ALONE = 200


def leaders_note(leaders):
    """Where the sessions ran: the followers first, in both clusters (cli/src/bench/cluster.rs)."""
    if not leaders:
        return ""
    return (", the two followers first, in both clusters alike (so one session writes through a follower, "
            f"which forwards to the leader; testkeeper's member {leaders['testkeeper']} and ZooKeeper's member "
            f"{leaders['zookeeper']} led)")


def cluster_section(c):
    """Lines of the doc's section on the cluster comparison (or why there is none)."""
    L = [CLUSTER_TITLE + "\n"]
    if not c:
        return L + ["Not measured in this run (`--no-cluster`).\n"]
    cfg = c["config"]
    run_at = c.get("measured_at", "?")
    load = c.get("load_average")
    where = (f"on this 2-core machine (load average {load:.1f} when it ended)" if load is not None
             else "on this shared 2-core machine")
    L.append(f"`testkeeper bench --cluster` (`cli/src/bench/cluster.rs`), run {run_at} {where}: three "
             "`testkeeper serve --id N --peers ...` processes (keeper flavor, in memory, default threads (for members all on loopback, the cores divided among the three: one each on 2 cores, docs/cluster.md \"Threads\") and "
             "Raft timings: 20 ms ticks, election after 10-14 ticks, a distinct offset per node) "
             "against three ZooKeeper 3.8 JVMs (Debian's package, `forceSync=no`, tickTime 2000, -Xmx1000m), "
             "all six on this machine's loopback. Sessions are spread over the three members in turn"
             + leaders_note(c.get("leaders_at_start")) + "; rounds "
             f"alternate between the clusters (A B, B A, ...), {cfg['rounds']} per cluster, {cfg['ops']} ops per "
             f"round, after {cfg['warmup']} unmeasured ops of each workload on each cluster (so that ZooKeeper's JIT has "
             f"compiled its write path), {cfg['value_size']} B values over {cfg['keys']} keys, "
             f"seed {cfg['seed']}; ratios (testkeeper / ZooKeeper) are medians of per-round ratios.\n")
    java = [w.get("java") for w in c["workloads"]]
    measured = [j for j in java if j and "skipped" not in j]
    L.append("| workload | sessions | throughput ratio | p99 ratio | Java client throughput ratio "
             "| Java client p99 ratio | testkeeper ops/s | ZooKeeper ops/s | testkeeper ops/s (Java) "
             "| ZooKeeper ops/s (Java) | Java client CPU, cores (vs testkeeper / vs ZooKeeper) "
             "| testkeeper p99 µs | ZooKeeper p99 µs |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    med = statistics.median
    for w, j in zip(c["workloads"], java):
        have = j and "skipped" not in j
        jcols = (f"**{fmt_ratio(j['throughput_ratio'])}** | **{fmt_ratio(j['p99_ratio'])}** | " if have
                 else "- | - | ")
        # The client JVM's CPU time over its measured wall time: near 2, the client sets the pace.
        cores = lambda i: med(c_ / s_ for c_, s_ in zip(j["client_cpu_s"][i], j["seconds"][i]))  # noqa: E731
        jops = (f"{med(j['testkeeper_ops_per_sec']):.0f} | {med(j['zookeeper_ops_per_sec']):.0f} | "
                f"{cores(0):.2f} / {cores(1):.2f} | " if have else "- | - | - | ")
        L.append(f"| {w['workload']} (`{w['mix']}`) | {w['sessions']} | **{fmt_ratio(w['throughput_ratio'])}** | "
                 f"**{fmt_ratio(w['p99_ratio'])}** | {jcols}{med(w['testkeeper_ops_per_sec']):.0f} | "
                 f"{med(w['zookeeper_ops_per_sec']):.0f} | {jops}{med(w['testkeeper_p99_us']):.0f} | "
                 f"{med(w['zookeeper_p99_us']):.0f} |")
    if measured:
        errors = sum(j["errors"] for j in measured)
        L.append("\nThe Java client columns: `bench --cluster --java` ran each workload again through Apache "
                 "ZooKeeper's own Java client (`scripts/bench-java/LoadGen.java`, Debian's zookeeper.jar, one JVM "
                 "per round that first warms itself with a quarter of the round's ops), its sessions on the same "
                 "members in the same order as `testkeeper bench`'s, the same rounds alternating; ratios are "
                 f"medians of per-round ratios; {errors:.0f} errors over all its rounds. Like the standalone "
                 "cross-check above, the Java client is heavier than ours and shares the 2 cores with the six "
                 "servers, so where it saturates a core its ratio shrinks towards 1x.")
    elif any(j and "skipped" in j for j in java):
        L.append(f"\nThe Java client was not run: {next(j['skipped'] for j in java if j and 'skipped' in j)}.")
    below = [f"{w['workload']} x{w['sessions']} ({fmt_ratio(w['throughput_ratio'])})" for w in c["workloads"]
             if w["throughput_ratio"] < 3]
    L.append("\nTarget (issue 13): throughput >= 3x the ensemble's. "
             + (f"Not met in this run by: {', '.join(below)}." if below else "Met in every row of this run."))
    f = c["failover"]
    L.append("")
    L.append("**Leader kill to the first acknowledged write.** Before each kill, one client is connected to each "
             "member that will survive; the leader is SIGKILLed, then both clients create a node until one create "
             "is acknowledged (reconnecting when their server drops them, as a ZooKeeper follower without a leader "
             "does); the killed member is restarted and the cluster is whole again before the next round. "
             f"testkeeper: {', '.join('none within 60 s' if x is None else f'{x:.0f}' for x in f['testkeeper_ms'])} ms (median "
             f"{f['testkeeper_median_ms']:.0f}); ZooKeeper: {', '.join('none within 60 s' if x is None else f'{x:.0f}' for x in f['zookeeper_ms'])} ms "
             f"(median {f['zookeeper_median_ms']:.0f}): ratio **{fmt_ratio(f['ratio'], 3)}**. Both sides see the "
             "dead leader's sockets close at once. testkeeper's survivors then find its Raft address refusing "
             "connections, leave its lease, and the first in id order stands for election within two 20 ms ticks "
             "(docs/cluster.md, \"When the leader's process dies\"; before, they waited out the election timeout, "
             "`--election-ticks` x `--raft-tick-ms` plus the survivor's offset, 200-280 ms by default, and Keeper's "
             "defaults take 1-2 s); ZooKeeper's elect a new leader with FastLeaderElection (200 ms finalize "
             "wait), then sync.")
    alone = f.get("testkeeper_alone")
    if alone and alone["kills"]:
        q = alone["quantiles"]
        L.append("")
        L.append(f"The write gap's spread: {alone['kills']} more leader kills of the testkeeper cluster alone, right "
                 f"after the paired ones (`--failover-rounds {alone['kills']}`), each round as above: p50 "
                 f"{q['p50_ms']:.0f} ms, **p99 {q['p99_ms']:.0f} ms**, max {q['max_ms']:.0f} ms"
                 + (f"; {alone['failed']} kill(s) saw no write within 60 s." if alone["failed"] else
                    "; every kill saw a write acknowledged.")
                 + f" ZooKeeper's ensemble gets only the paired rounds: its spread is the {len(f['zookeeper_ms'])} "
                 "above.")
    L.append("")
    st = c["start"]
    cur = st["curator"]
    line = (f"**In-process start of 3 nodes to a leader.** `TestKeeperCluster::start(3)` to `await_leader` (a "
            "fresh cluster's first node in the election order stands at once, docs/cluster.md): "
            f"{', '.join(f'{x:.1f}' for x in st['testkeeper_samples_ms'])} ms (median "
            f"{st['testkeeper_median_ms']:.1f}).")
    if "skipped" in cur:
        line += f" Curator's `TestingCluster` was not measured: {cur['skipped']}."
    else:
        line += (f" Curator 5.4's `TestingCluster(3)` (Debian's libcurator-test-java; "
                 "`scripts/bench-java/ClusterStart.java`, all starts in one JVM, the constructor to the first "
                 "`srvr` that says `Mode: leader`): "
                 f"{', '.join(f'{x:.0f}' for x in cur['samples_ms'])} ms (median {cur['median_ms']:.0f}; the first "
                 f"start pays for a cold JVM): ratio **{fmt_ratio(cur['ratio'], 4)}**.")
    L.append(line + "\n")
    L.append("Raw rounds: `target/bench-report/cluster.json`.\n")
    return L


def stamped(c):
    """The cluster run with the time it was measured (kept in its JSON for --render-only)."""
    c["measured_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    c["load_average"] = os.getloadavg()[0]
    with open(os.path.join(OUT, "cluster.json"), "w") as f:
        json.dump(c, f, indent=1)
    return c


def splice_cluster_section(c):
    """Replaces the cluster section of the existing doc (or adds it before Digest overhead)."""
    text = open(DOC).read()
    section = "\n".join(cluster_section(c)) + "\n"
    if CLUSTER_TITLE in text:
        start = text.index(CLUSTER_TITLE)
        end = text.index("\n## ", start + 1) + 1
        text = text[:start] + section + text[end:]
    else:
        at = text.index("## Digest overhead")
        text = text[:at] + section + text[at:]
    with open(DOC, "w") as f:
        f.write(text)
    print("wrote", DOC)


def profile(seconds):
    """perf samples of a loaded `serve` (cpu-clock, so it works without hardware counters)."""
    if not shutil.which("perf"):
        return "perf not installed (apt-get install linux-perf); no profile taken."
    srv = Serve()
    data = os.path.join(OUT, "perf.data")
    try:
        rec = subprocess.Popen(["perf", "record", "-F", "999", "-e", "cpu-clock", "-g", "-o", data, "-p",
                                str(srv.p.pid), "--", "sleep", str(seconds)], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        load = subprocess.Popen([BIN, "bench", "--target", srv.addr, "--sessions", "8", "--pipeline", "16",
                                 "--ops", "400000", "--rounds", "1", "--warmup", "0"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        rec.wait()
        load.kill()
        load.wait()
    finally:
        srv.stop()
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol", "--stdio",
                          "--percent-limit", "1.5", "-g", "none"], capture_output=True, text=True)
    # perf pads every row with trailing columns ("-  -") to the terminal width; drop them.
    lines = [re.sub(r"(\s+-)*\s*$", "", l) for l in rep.stdout.splitlines() if l.strip() and not l.startswith("#")]
    return "\n".join(lines[:25])


KAZOO_SERVERS = [("zookeeper", "ZooKeeper 3.8", None),
                 ("testkeeper-zookeeper", "testkeeper `--flavor zookeeper`", ["--flavor", "zookeeper"]),
                 ("testkeeper-keeper", "testkeeper `--flavor keeper`", ["--flavor", "keeper"])]


def kazoo_durations(log):
    """Seconds per test (setup + call + teardown) from pytest's `--durations=0` lines in `log`."""
    out = {}
    for line in open(log, errors="replace"):
        m = re.match(r"\s*([\d.]+)s (?:setup|call|teardown)\s+\S*kazoo/tests/(\S+)", line)
        if m:
            out[m.group(2)] = round(out.get(m.group(2), 0) + float(m.group(1)), 3)
    return out


def kazoo_walltime(rounds):
    """kazoo's own test suite (tests/kazoo/run_kazoo_suite.py) against a fresh server of each kind,
    servers in turn and the order reversed every round. Wall time is the suite process's, from
    launch to exit (server start not included); pytest's per-test durations are kept too."""
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        raise SystemExit(f"no kazoo venv at {VENV}: run scripts/install-test-deps.sh, set TESTKEEPER_VENV, "
                         "or pass --no-kazoo")
    runs = []
    for r in range(rounds):
        for key, label, flags in (KAZOO_SERVERS if r % 2 == 0 else KAZOO_SERVERS[::-1]):
            out, log = (os.path.join(OUT, f"kazoo-{key}-{r}.{ext}") for ext in ("json", "log"))
            with (ZooKeeper() if flags is None else Serve(*flags)) as srv, open(log, "w") as f:
                print(f"+ kazoo suite vs {label} at {srv.addr} (round {r}) > {log}", flush=True)
                t0 = time.monotonic()
                subprocess.run([python, KAZOO_SUITE, "--hosts", srv.addr, "--json", out, "--",
                                "--durations=0", "--durations-min=0"], stdout=f, stderr=subprocess.STDOUT,
                               check=True)
                wall = time.monotonic() - t0
            outcomes = json.load(open(out))
            counts = {}
            for outcome in outcomes.values():
                counts[outcome] = counts.get(outcome, 0) + 1
            print(f"  {wall:.1f} s, {counts}", flush=True)
            runs.append({"server": key, "label": label, "round": r, "wall_s": wall, "counts": counts,
                         "not_passing": sorted(t for t, o in outcomes.items() if o in ("failed", "error", "timeout")),
                         "durations": kazoo_durations(log)})
    result = {"rounds": rounds, "kazoo": kazoo_version(python), "runs": runs}
    with open(os.path.join(OUT, "kazoo-walltime.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


def kazoo_version(python):
    """The kazoo version installed in the venv."""
    return subprocess.run([python, "-c", "import kazoo.version; print(kazoo.version.__version__)"],
                          capture_output=True, text=True).stdout.strip() or "?"


def loadgen_classpath():
    """Compiles scripts/bench-java/LoadGen.java into OUT/java unless its class is newer than the
    source, and returns the classpath to run it with."""
    classes = os.path.join(OUT, "java")
    cls = os.path.join(classes, "LoadGen.class")
    if not os.path.exists(cls) or os.path.getmtime(cls) < os.path.getmtime(LOADGEN_SRC):
        os.makedirs(classes, exist_ok=True)
        # -implicit:none: do not compile sources javac finds on the classpath (findbugs annotations).
        sh(["javac", "-implicit:none", "-cp", ZK_JAR, "-d", classes, LOADGEN_SRC])
    return f"{classes}:{ZK_JAR}"


def java_crosscheck(ops, rounds):
    """LoadGen (Apache ZooKeeper's Java client) against a spawned `testkeeper serve` and ZooKeeper,
    per shape in JAVA_SHAPES: rounds alternate (A B, B A, ...) and, as in `testkeeper bench`, the
    ratios (testkeeper / ZooKeeper) are medians of per-round ratios. Each server first gets one
    unmeasured run of WARMUP_OPS (the ZooKeeper JVM needs it), and each LoadGen process warms
    its own JVM with ops/4 unmeasured requests before the clock starts."""
    cp = loadgen_classpath()
    seed = random.randrange(2**62)  # seed + round stays a Java long
    shapes = []

    def loadgen(addr, sessions, window, n, seed_):
        cmd = ["java", "-cp", cp, "LoadGen", "--connect", addr, "--sessions", str(sessions), "--window", str(window),
               "--ops", str(n), "--seed", str(seed_)]
        print("+", " ".join(cmd), flush=True)
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

    with Serve() as tk, ZooKeeper() as zk:
        servers = [("testkeeper", tk.addr), ("zookeeper", zk.addr)]
        for _, addr in servers:
            loadgen(addr, 8, 16, WARMUP_OPS, seed ^ 0x5757)
        for sessions, window in JAVA_SHAPES:
            per = {"testkeeper": [], "zookeeper": []}
            for r in range(rounds):
                for label, addr in (servers if r % 2 == 0 else servers[::-1]):
                    res = loadgen(addr, sessions, window, ops, seed + r)
                    print(f"  round {r} {label:<11} {res['ops_per_sec']:>8.0f} ops/s  p99 {res['p99_us']:>6} us  "
                          f"errors {res['errors']}", flush=True)
                    per[label].append(res)
            t, z = per["testkeeper"], per["zookeeper"]
            shapes.append({
                "sessions": sessions, "window": window, "rounds": per,
                "throughput_ratio": statistics.median(a["ops_per_sec"] / b["ops_per_sec"] for a, b in zip(t, z)),
                "p99_ratio": statistics.median(a["p99_us"] / max(b["p99_us"], 1) for a, b in zip(t, z)),
            })
    result = {"ops": ops, "rounds": rounds, "seed": seed, "warmup_ops": WARMUP_OPS, "shapes": shapes}
    with open(os.path.join(OUT, "java-crosscheck.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


def fmt_ratio(x, digits=2):
    return f"{x:.{digits}f}x"


def java_section(java, runs):
    """Lines of the doc's section on the Java-client cross-check (or why there is none)."""
    L = ["## Independent client (Apache ZooKeeper Java client)\n"]
    if not java:
        return L + ["Not measured in this run (`--no-java`).\n"]
    L.append(f"`scripts/bench-java/LoadGen.java` drives both servers through Apache ZooKeeper's own Java client "
             "(Debian's `zookeeper.jar`, async API), so no code of ours is on the client side. It mirrors the "
             "bench's workload: the default mix `create=10,get=50,set=20,delete=10,multi=5,list=5`, 100 B values, "
             "256 pre-created keys under a random prefix, a seeded random choice of op and key. One `testkeeper "
             f"serve` and one ZooKeeper are started for it and each first gets {java.get('warmup_ops', 0)} unmeasured "
             f"ops; then {java['ops']} measured ops per round, after {java['ops'] // 4} unmeasured ones in the "
             f"same client JVM, {java['rounds']} rounds per server "
             f"alternating, seed {java['seed']}; ratios (testkeeper / ZooKeeper) are medians of per-round ratios. "
             "Next to them, `testkeeper bench`'s ratio for the same shape from the table above (a separate pair "
             "of servers, earlier in this run).\n")
    L.append("| sessions | in flight / session | Java client throughput ratio | `testkeeper bench` throughput ratio "
             "| Java client p99 ratio | `testkeeper bench` p99 ratio | testkeeper ops/s (Java) | ZooKeeper ops/s "
             "(Java) | Java client CPU, cores (vs testkeeper / vs ZooKeeper) | errors |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sh_ in java["shapes"]:
        s, w, per = sh_["sessions"], sh_["window"], sh_["rounds"]
        ours = runs.get((s, w), {}).get("summary", {}).get("vs")
        med = {k: statistics.median(x["ops_per_sec"] for x in v) for k, v in per.items()}
        errors = sum(x["errors"] for v in per.values() for x in v)
        cores = {k: statistics.median(x.get("client_cpu_s", 0) / x["seconds"] for x in v) for k, v in per.items()}
        L.append(f"| {s} | {w}{' (sync)' if w == 1 else ''} | **{fmt_ratio(sh_['throughput_ratio'])}** | "
                 f"{fmt_ratio(ours['throughput_ratio']) if ours else 'n/a'} | **{fmt_ratio(sh_['p99_ratio'])}** | "
                 f"{fmt_ratio(ours['p99_ratio']) if ours else 'n/a'} | {med['testkeeper']:.0f} | "
                 f"{med['zookeeper']:.0f} | {cores['testkeeper']:.2f} / {cores['zookeeper']:.2f} | {errors} |")
    L.append("\nThe Java client is heavier than ours (a send thread and an event thread per session, each reply "
             "handed from one to the other), and it shares the 2 cores with the server like ours does, so its "
             "own cost is in both of its numbers. Its CPU column is the client JVM's CPU time over the measured "
             "wall time: near 2 cores, the client, not the server, sets the pace, and the throughput ratio "
             "shrinks towards 1x whatever the servers could do. NodeExists / NoNode replies to the mix's random "
             "creates, deletes, gets and sets are answers, not errors; `errors` counts any other code and "
             "requests lost with a session. Raw rounds: `target/bench-report/java-crosscheck.json`.\n")
    return L


def kazoo_section(kazoo):
    """Lines of the doc's section on kazoo's test-suite wall time (or why there is none)."""
    L = ["## kazoo test-suite wall time\n"]
    if not kazoo:
        return L + ["Not measured in this run (`--no-kazoo`).\n"]
    by = {key: [r for r in kazoo["runs"] if r["server"] == key] for key, _, _ in KAZOO_SERVERS}
    wall = {k: statistics.median(r["wall_s"] for r in v) for k, v in by.items()}
    excluded = kazoo["runs"][0]["counts"].get("excluded", 0)
    L.append(f"kazoo {kazoo['kazoo']}'s own test suite, run by `tests/kazoo/run_kazoo_suite.py` ({excluded} tests "
             "that stop servers or need TLS, SASL or a quorum are excluded), against a fresh server of each kind, "
             f"one suite at a time, {kazoo['rounds']} round(s) (the order reversed every round). Wall time is "
             "the suite process's, launch to exit (the server was already up); median over rounds. Counts are "
             "per round (`a/b` when rounds differ).\n")
    L.append("| server | wall time s | ratio to ZooKeeper | passed | failed | error / timeout | skipped |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")

    def count(runs_, *outcomes):
        vals = sorted({sum(r["counts"].get(o, 0) for o in outcomes) for r in runs_})
        return "/".join(map(str, vals))

    for key, label, _ in KAZOO_SERVERS:
        ratio = "1.00x" if key == "zookeeper" else f"**{fmt_ratio(wall[key] / wall['zookeeper'])}**"
        L.append(f"| {label} | {wall[key]:.1f} | {ratio} | {count(by[key], 'passed')} | {count(by[key], 'failed')} | "
                 f"{count(by[key], 'error', 'timeout')} | {count(by[key], 'skipped')} |")
    for key, label, _ in KAZOO_SERVERS:
        bad = sorted({t for r in by[key] for t in r["not_passing"]})
        if bad:
            L.append(f"\nNot passing on {label} (any round): " + ", ".join(f"`{t}`" for t in bad[:10])
                     + (f" and {len(bad) - 10} more" if len(bad) > 10 else ""))
    # What the time is: pytest's per-test durations of the median ZooKeeper run.
    zk = sorted(by["zookeeper"], key=lambda r: r["wall_s"])[len(by["zookeeper"]) // 2]["durations"]
    slow = {t for t, d in zk.items() if d >= 1.0}

    def split(key):
        """Seconds in the tests slow on ZooKeeper, and in all others, for one server (median run)."""
        d = sorted(by[key], key=lambda r: r["wall_s"])[len(by[key]) // 2]["durations"]
        return sum(v for t, v in d.items() if t in slow), sum(v for t, v in d.items() if t not in slow)

    parts = {key: split(key) for key in by}
    top = sorted(zk.items(), key=lambda kv: -kv[1])[:5]
    L.append(f"\n**What the time is.** By pytest's per-test durations, the {len(slow)} tests that took 1 s or more "
             f"on ZooKeeper spent {parts['zookeeper'][0]:.0f} s of its {wall['zookeeper']:.0f} s; the slowest: "
             + ", ".join(f"`{t.split('::')[-1]}` {d:.1f} s" for t, d in top) + ". "
             "They wait on clocks, not on the server: in kazoo 2.11.0 `test_select` runs a shell loop of ten "
             "`sleep 1` and never talks to a server, the children-watcher tests wait out a 10 s or 4 s "
             "`Event.wait` for an event that must not come, the partitioner race tests sleep past a mocked slow "
             "lock, and the lock and semaphore timeout tests wait for their timeouts."
             + (" So the wall-time ratio above mostly measures those timers."
                if parts["zookeeper"][0] > wall["zookeeper"] / 2 else ""))
    L.append(f"The same {len(slow)} tests took " + ", ".join(
        f"{parts[k][0]:.0f} s on {lab}" for k, lab, _ in KAZOO_SERVERS[1:]) + ". All the other tests together: "
             + ", ".join(f"{parts[k][1]:.1f} s on {lab}" for k, lab, _ in KAZOO_SERVERS) + " (ratio to ZooKeeper "
             + ", ".join(f"**{fmt_ratio(parts[k][1] / max(parts['zookeeper'][1], 1e-9))}**"
                         for k, _, _ in KAZOO_SERVERS[1:]) + "); the rest of the wall time is Python start-up "
             "and test collection.")
    zk_d, kp_d = (sorted(by[k], key=lambda r: r["wall_s"])[len(by[k]) // 2]["durations"]
                  for k in ("zookeeper", "testkeeper-keeper"))
    extra = [kp_d[t] - zk_d[t] for t in zk_d if t in kp_d and t not in slow and kp_d[t] - zk_d[t] > 0.1]
    L.append(f"With `--flavor keeper`, {len(extra)} of the other tests took over 0.1 s longer each than on "
             f"ZooKeeper, {sum(extra):.0f} s together. Keeper does not answer closeSession, it closes the socket "
             "(docs/flavors.md); kazoo's `client.stop()` takes that for a dropped connection and tries to reconnect "
             "before it gives up, so a test pays for every client it stops (the harness stops at least two per "
             "test). Per-test "
             "outcomes and durations: `target/bench-report/kazoo-*.json`, `kazoo-*.log`.\n")
    return L


def ratio_rows(runs, a, b):
    """Table rows (sessions, in flight, ratios, medians) of a bench matrix of a against b."""
    rows = []
    for (s, w), r in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        vs, med = r["summary"]["vs"], {t["label"]: t for t in r["summary"]["targets"]}
        rows.append(f"| {s} | {w}{' (sync)' if w == 1 else ''} | **{fmt_ratio(vs['throughput_ratio'])}** | "
                    f"**{fmt_ratio(vs['p99_ratio'])}** | {med[a]['ops_per_sec_median']:.0f} | "
                    f"{med[b]['ops_per_sec_median']:.0f} | {med[a]['p99_us_median']:.0f} | {med[b]['p99_us_median']:.0f} |")
    return rows


def faster_or_slower(ratio):
    """A time ratio in words: 0.25 is "4.0x faster", 2.0 is "2.0x slower"."""
    return f"{1 / ratio:.1f}x faster" if ratio < 1 else f"{ratio:.1f}x slower"


def ratio_table(runs, a, b):
    """A bench matrix of a against b as a table; a and b are (label in the JSON, name in the header)."""
    return [f"| sessions | in flight / session | throughput ratio | p99 ratio | {a[1]} ops/s | {b[1]} ops/s "
            f"| {a[1]} p99 µs | {b[1]} p99 µs |", "|---:|---:|---:|---:|---:|---:|---:|---:|"] \
        + ratio_rows(runs, a[0], b[0]) + [""]


def floor_lines(f):
    """The synchronous single session against the disk's floor (`bench --durable`, cli/src/bench/floor.rs)."""
    if not f:
        return []
    return [f"One synchronous session against the disk's floor, in the same run: a `testkeeper serve` in memory took "
            f"the same workload ({f['memory_ops_per_sec_median']:.0f} ops/s, {f['write_path_us']:.0f} µs a write) and "
            f"a file beside the data directories took {f['appends']} appends of {f['record_bytes']} B, each followed "
            f"by `fdatasync` (median {f['fdatasync_us_median']:.0f} µs, p99 {f['fdatasync_us_p99']:.0f} µs): no server "
            f"answers a durable write faster than their sum, {f['floor_ops_per_sec']:.0f} ops/s. Durable testkeeper "
            f"reached {f['durable_ops_per_sec']:.0f} ops/s, **{f['ratio']:.2f}x of the floor** (issue 30 asks 0.8x). "
            f"The durable server's `mntr` read {f.get('durable_flush_ms_avg') or 0:.2f} ms per flush on average "
            f"(`zk_avg_fsynctime`: moving the staged records into sled and its flush, a `pwrite` and a "
            f"`sync_file_range`) where the bare `fdatasync` took {f['fdatasync_us_median'] / 1e3:.2f} ms. That flush is "
            "`sync_file_range`, a weaker promise than the floor's `fdatasync`: it survives a killed process, not "
            "necessarily a power loss. Until d7b0330 every flush also moved the hard state into sled, a second key: "
            "sled then wrote a batch manifest and the records as two buffers, each with its own `sync_file_range`, "
            "and the report run before it measured 0.70x of the floor.\n"]


def durability_sections(durable, baseline, start, commit):
    """Lines of the doc's sections on issue 12: durable writes, the previous release, big snapshots."""
    L = ["## Durable writes: `--fsync always` vs ZooKeeper `forceSync=yes`\n"]
    if durable:
        cfg = next(iter(durable.values()))["config"]
        L.append("`testkeeper bench --spawn-testkeeper --spawn-zookeeper --durable`: testkeeper serves a fresh "
                 "`--data-dir` with `--fsync always` (a write is answered after the sled flush that covers its log "
                 "entry, group commit), ZooKeeper runs with `forceSync=yes` (an fsync of its transaction log before "
                 "it answers); both data directories under the system temp directory, on one disk. Write-only mix "
                 f"`{cfg['mix']}`, {cfg['value_size']} B values, {cfg['rounds']} rounds per server alternating; the "
                 "synchronous single session gets a tenth of the ops of the other rows. Issue 12 asks for >= 3x "
                 "throughput at 1 and 32 sessions. What the two flushes promise differs: sled's flush is "
                 "`sync_file_range`, ZooKeeper's is `fsync` ([persistence.md](persistence.md)).\n")
        L += ratio_table(durable, ("testkeeper", "testkeeper"), ("zookeeper", "ZooKeeper"))
        L += floor_lines(durable.get((1, 1), {}).get("floor"))
    else:
        L.append("Not measured in this run (`--no-durable`).\n")
    L.append(f"## In memory: this build vs the release before the durable engine (`{commit}`)\n")
    if baseline:
        L.append(f"Commit `{commit}` built in release mode from a `git worktree` (`scripts/bench-report.py` does it), "
                 "started next to this build's `serve` in each run (`bench --spawn-testkeeper --spawn-baseline BIN`), "
                 "both in memory, the default mix and shapes of the first table; ratios are this build / the "
                 "baseline (medians of per-round ratios). Issue 12 asks that no row fall below 0.9x.\n")
        L += ratio_table(baseline, ("testkeeper", "this build"), ("baseline", "baseline"))
    else:
        L.append("Not measured in this run (`--no-baseline`).\n")
    L.append("## A big tree on disk: start time and snapshot cost\n")
    if not start:
        return L + ["Not measured in this run (`--start-znodes 0`).\n"]
    tk, zk, n = start["testkeeper"], start["zookeeper"], start["znodes"]
    L.append(f"`testkeeper bench --start-znodes {n} --restarts {start['restarts']}`: {n} znodes of "
             f"{start['value_size']} B (1000 per parent) written into each server, then the server killed and started "
             "again on its data directory. testkeeper's directory holds its snapshots (taken with `csnp` below) and "
             "the log kept under them (`--reserved-log-items` 100000, each record verified at open); ZooKeeper is "
             "started once first, which replays its transaction log and writes a snapshot of the loaded tree, and "
             "then timed starting from that snapshot. A start is spawn to serving (testkeeper: `imok`, it accepts "
             "once recovered; ZooKeeper: `srvr` reports a Mode).\n")
    L.append("| server | start ms (median) | starts ms | first start after populate ms | populate s |")
    L.append("|---|---:|---|---:|---:|")
    L.append(f"| testkeeper | {tk['start_ms_median']:.0f} | {', '.join(f'{x:.0f}' for x in tk['start_ms'])} | "
             f"{tk['start_ms'][0]:.0f} | {tk['populate_s']:.1f} |")
    L.append(f"| ZooKeeper | {zk['start_ms_median']:.0f} | {', '.join(f'{x:.0f}' for x in zk['start_ms'])} | "
             f"{zk['first_restart_ms']:.0f} | {zk['populate_s']:.1f} |")
    L.append(f"\nStart time ratio testkeeper / ZooKeeper: **{fmt_ratio(start['start_ratio'], 3)}** "
             f"(**{faster_or_slower(start['start_ratio'])}**). On disk, testkeeper: snapshots "
             f"{tk['on_disk']['snapshots_bytes'] / 2**20:.1f} MiB (the last {len(tk['snapshots'])} of them), log "
             f"{tk['on_disk']['log_bytes'] / 2**20:.1f} MiB.\n")
    L.append(f"Snapshots of the {n}-znode tree, each by `csnp` after one more create: the engine's lock is held "
             "while the state is copied, then again while the log is compacted below the new snapshot; the "
             "serialization, zstd compression, write and fsync run on their own thread. A client calling "
             "`exists(\"/\")` in a loop meanwhile shows what a request waits:\n")
    L.append("| snapshot index | lock: copy ms | lock: log compaction ms | off the lock: write ms | file MiB | slowest "
             "exists() ms meanwhile | calls |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|")
    for s in tk["snapshots"]:
        L.append(f"| {s['index']} | {s['copy_us'] / 1e3:.1f} | {s['compact_us'] / 1e3:.1f} | {s['write_us'] / 1e3:.0f} | "
                 f"{s['bytes'] / 2**20:.1f} | {s['probe_max_us'] / 1e3:.1f} | {s['probe_calls']} |")
    L.append(f"\nWith no snapshot running, the slowest of {tk['idle_probe_calls']} such calls in one second took "
             f"{tk['idle_probe_max_us'] / 1e3:.1f} ms.\n")
    return L


BEGIN_DURABLE, END_DURABLE = "<!-- durability sections: begin -->", "<!-- durability sections: end -->"


def durability_block(durable, baseline, start, commit, note=None):
    """The durability sections between markers, so --only-durability can replace them alone."""
    notes = os.path.join(ROOT, "scripts", "bench-report-durability-notes.md")
    hand = [open(notes).read()] if os.path.exists(notes) else []
    return [BEGIN_DURABLE + "\n"] + ([note + "\n"] if note else []) + durability_sections(durable, baseline, start, commit) \
        + hand + [END_DURABLE + "\n"]


def splice_durability(durable, baseline, start, commit):
    """--only-durability: rewrites only the durability sections of the committed doc (between the markers, or
    before the kazoo section if there are none yet); the rest stays from the last full run."""
    # When the measurements were taken (their files' times), so --render-only does not restamp them.
    times = [os.path.getmtime(os.path.join(OUT, f)) for f in os.listdir(OUT)
             if re.match(r"(durable-s|vs-baseline-s|start-snapshot).*\.json$", f)] or [time.time()]
    when = " to ".join(sorted({datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
                            for t in (min(times), max(times))}))
    note = (f"*These sections come from a separate run of `scripts/bench-report.py --only-durability` ({when}, on a "
            "2-core machine shared with other builds and tests, so absolute figures are noisy; the ratios come from "
            "alternating rounds in one run); the other sections are from the full run dated above.*")
    block = "\n".join(durability_block(durable, baseline, start, commit, note))
    text = open(DOC).read()
    if BEGIN_DURABLE in text:
        a, b = text.index(BEGIN_DURABLE), text.index(END_DURABLE) + len(END_DURABLE) + 1
        text = text[:a] + block + text[b:]
    else:
        a = text.index("## kazoo test-suite wall time")
        text = text[:a] + block + "\n" + text[a:]
    with open(DOC, "w") as f:
        f.write(text)
    print("wrote", DOC)


LAUNCH_TITLE = "## Start time\n"


def launch_section(launch):
    """Spawn to the first imok, testkeeper against ZooKeeper twice over (`bench --launches`)."""
    L = [LAUNCH_TITLE]
    if not launch:
        return L + ["Not measured in this run.\n"]
    n, ph = launch["starts"], launch["testkeeper_phases_us_median"]
    jvm = " ".join(launch["zookeeper_fast_start_jvm"])
    L.append(f"`testkeeper bench --launches {n}`: spawn of the process to the first `imok` answer to `ruok` (polled "
             f"every {launch['poll_us']} µs), {n} starts of each, in turns of {launch['block']} starts: `testkeeper "
             f"serve` in memory, ZooKeeper as the rest of this report runs it (`-Xmx1000m`, default GC), ZooKeeper "
             f"tuned for a fast start (`{jvm}`); medians. Measured {launch.get('measured_at', '?')}.\n")
    L.append("| server | spawn to imok, median ms | testkeeper starts |")
    L.append("|---|---:|---:|")
    L.append(f"| `testkeeper serve` | {launch['testkeeper_ms_median']:.2f} | |")
    if launch.get("testkeeper_after_jvm_ms_median") is not None:
        L.append(f"| `testkeeper serve`, the starts right after a JVM exited | "
                 f"{launch['testkeeper_after_jvm_ms_median']:.2f} | |")
    L.append(f"| ZooKeeper | {launch['zookeeper_ms_median']:.0f} | **{launch['times_faster']:.0f}x faster** |")
    L.append(f"| ZooKeeper tuned for start | {launch['zookeeper_fast_start_ms_median']:.0f} | "
             f"**{launch['times_faster_than_fast_start']:.0f}x faster** |")
    if ph.get("total_us") is not None:
        rest = launch["testkeeper_ms_median"] - ph["total_us"] / 1e3
        L.append(f"\nWhere testkeeper's start goes (medians of its own `launch` log line, `RUST_LOG=launch=debug`): "
                 f"parsing the arguments {ph['args_us'] / 1e3:.2f} ms, logging {ph['logging_us'] / 1e3:.2f} ms, the "
                 f"runtime {ph['runtime_us'] / 1e3:.2f} ms, the server up to its announce (config, signals, engine, "
                 f"bind) {ph['server_us'] / 1e3:.2f} ms: `main` to announce {ph['total_us'] / 1e3:.2f} ms. The other "
                 f"{rest:.2f} ms are before `main` (exec, the dynamic loader) and after the announce (the bench's "
                 "connect and `ruok`).")
    embedded = launch.get("embedded")
    if embedded:
        L.append(f"\nEmbedded (`TestKeeper::start` in-process to `imok`): {embedded['start_to_imok_ms_median']:.3f} ms, "
                 f"{launch['zookeeper_ms_median'] / embedded['start_to_imok_ms_median']:.0f}x faster than ZooKeeper.")
    notes = os.path.join(ROOT, "scripts", "bench-report-launch-notes.md")
    if os.path.exists(notes):
        L.append("\n" + open(notes).read().rstrip("\n"))
    return L + [""]


def splice_launch_section(launch):
    """--launch-only: replaces the start-time section of the existing doc (the rest stays)."""
    text = open(DOC).read()
    section = "\n".join(launch_section(launch)) + "\n"
    start = text.index(LAUNCH_TITLE)
    end = text.index("\n## ", start + 1) + 1
    marker = text.find(BEGIN_DURABLE, start)
    if marker != -1 and marker < end:
        end = marker
    text = text[:start] + section + text[end:]
    with open(DOC, "w") as f:
        f.write(text)
    print("wrote", DOC)


def launches(n):
    """`bench --launches n`, stamped with when it ran (kept in its JSON for --render-only)."""
    out = bench("launch", "--launches", n)["launch"]
    out["measured_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(os.path.join(OUT, "launch.json"), "w") as f:
        json.dump({"launch": out}, f, indent=1)
    return out


def write_doc(runs, digest, mem, prof, args, kazoo=None, java=None, watch=None, durable=None, baseline=None,
              start=None, cluster=None, launch=None):
    def vs(r):
        return r["summary"]["vs"]

    def med(r, label, key):
        return next(t[key] for t in r["summary"]["targets"] if t["label"] == label)

    # When the measurements were taken (the first matrix file's time), not when this rendered:
    # --render-only must not restamp an old run.
    first = os.path.join(OUT, "vs-zk-s1-w1.json")
    now = datetime.datetime.fromtimestamp(os.path.getmtime(first), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    zkv = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "zookeeper"], capture_output=True, text=True).stdout
    cfg = runs[(1, 1)]["config"]
    L = []
    L.append("# Performance: testkeeper vs Apache ZooKeeper 3.8\n")
    L.append("Generated by `scripts/bench-report.py` — do not edit by hand; rerun it. "
             "Every number below is a **ratio measured in one run on one machine** "
             "(testkeeper / ZooKeeper unless said otherwise); absolute ops/s are shown only for context "
             "and mean little on a shared 2-core machine.\n")
    L.append(f"- Run: {now}{' (quick mode)' if args.quick else ''}; machine: {os.cpu_count()} cores, {cpu}, "
             f"{platform.system()} {platform.release()}")
    L.append(f"- testkeeper: release build of this tree; ZooKeeper: Debian package {zkv or '?'} "
             "(standalone, forceSync=no, -Xmx1000m, default GC), started by the bench on a free port")
    L.append(f"- Workload: `testkeeper bench`, mix `{cfg['mix']}`, {cfg['value_size']} B values, "
             f"{cfg['keys']} keys, {cfg['ops']} ops per round, {cfg['rounds']} rounds per server alternating "
             f"(A B, B A, ...), {cfg['warmup']} unmeasured warm-up ops each; ratios are medians of per-round ratios")
    replies = ("decoded (`--decode-replies`)" if cfg.get("decode_replies")
               else "read to the header only (error code counted, body skipped; `--decode-replies` decodes them)")
    L.append(f"- Replies to measured requests: {replies}")
    L.append("- Client and server share the 2 cores, so the client's own cost is in every figure for both servers.\n")
    L.append("## Throughput and p99 latency vs ZooKeeper\n")
    L.append("| sessions | in flight / session | throughput ratio | p99 ratio | testkeeper ops/s | ZooKeeper ops/s "
             "| testkeeper p99 µs | ZooKeeper p99 µs |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (s, w), r in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        L.append(f"| {s} | {w}{' (sync)' if w == 1 else ''} | **{fmt_ratio(vs(r)['throughput_ratio'])}** | "
                 f"**{fmt_ratio(vs(r)['p99_ratio'])}** | {med(r, 'testkeeper', 'ops_per_sec_median'):.0f} | "
                 f"{med(r, 'zookeeper', 'ops_per_sec_median'):.0f} | {med(r, 'testkeeper', 'p99_us_median'):.0f} | "
                 f"{med(r, 'zookeeper', 'p99_us_median'):.0f} |")
    L.append("\n![throughput vs sessions, synchronous](img/throughput-sync.png)\n")
    L.append("![throughput vs sessions, 16 in flight per session](img/throughput-pipelined.png)\n")
    L += java_section(java, runs)
    L += launch_section(launch)
    L += durability_block(durable, baseline, start, args.baseline_commit)
    L += kazoo_section(kazoo)
    L.append("## Memory per znode\n")
    if mem:
        m = mem["memory"]
        t, z = m["testkeeper"], m["zookeeper"]
        L.append(f"{t['znodes']} znodes of {t['value_size']} B (1000 per parent), VmRSS from /proc/PID/status before "
                 "and after, 2 s after the last create:\n")
        L.append("| server | RSS before MiB | RSS after MiB | bytes / znode | populate s |")
        L.append("|---|---:|---:|---:|---:|")
        for label, x in (("testkeeper", t), ("ZooKeeper", z)):
            L.append(f"| {label} | {x['rss_before'] / 2**20:.1f} | {x['rss_after'] / 2**20:.1f} | "
                     f"{x['bytes_per_znode']:.0f} | {x['populate_s']:.1f} |")
        L.append(f"\nMemory per znode ratio: **{fmt_ratio(t['bytes_per_znode'] / z['bytes_per_znode'])}**; "
                 f"populate speed ratio: **{fmt_ratio(z['populate_s'] / t['populate_s'])}**. "
                 "(The JVM's RSS includes heap it has not given back; that is what a test machine pays.)\n")
    else:
        L.append("Not measured in this run (`--znodes 0`).\n")
    L += watch_section(watch)
    L += cluster_section(cluster)
    L.append("## Digest overhead\n")
    d = digest["summary"]["vs"]
    L.append(f"Tree digest on (default) vs `--no-digest`, write-only mix `{WRITE_MIX}`, 8 sessions x 16 in flight: "
             f"throughput ratio on/off **{fmt_ratio(d['throughput_ratio'])}**, p99 ratio "
             f"**{fmt_ratio(d['p99_ratio'])}**. See also the criterion group `apply_digest_on` vs "
             "`apply_digest_off` (`cargo bench -p testkeeper-server --bench core`).\n")
    L.append("## Where the time goes\n")
    L.append("`perf record -F 999 -e cpu-clock -g -p <serve pid>` for a few seconds while `testkeeper bench` "
             "drives 8 sessions x 16 in flight with the default mix; top entries of "
             "`perf report --no-children --sort dso,symbol` (self time, >= 1.5%):\n")
    L.append("```\n" + prof + "\n```\n")
    L.append(open(os.path.join(ROOT, "scripts", "bench-report-notes.md")).read())
    with open(DOC, "w") as f:
        f.write("\n".join(L))
    print("wrote", DOC)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--znodes", type=int, default=1_000_000)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--no-kazoo", action="store_true", help="skip timing kazoo's test suite against each server")
    ap.add_argument("--no-java", action="store_true", help="skip the Apache ZooKeeper Java client cross-check")
    ap.add_argument("--no-watch-load", action="store_true", help="skip the watch workloads (fire, expire, setWatches)")
    ap.add_argument("--no-durable", action="store_true", help="skip durable writes vs ZooKeeper forceSync=yes")
    ap.add_argument("--no-baseline", action="store_true", help="skip this build vs the release before the engine change")
    ap.add_argument("--baseline-commit", default=BASELINE_COMMIT, help="the earlier build to compare with in memory")
    ap.add_argument("--start-znodes", type=int, default=1_000_000, help="tree size for start time and snapshot cost (0: skip)")
    ap.add_argument("--no-cluster", action="store_true", help="skip the 3-node cluster vs ZooKeeper ensemble")
    ap.add_argument("--cluster-only", action="store_true",
                    help="run only the cluster comparison and replace its section in the existing doc")
    ap.add_argument("--render-only", action="store_true", help="rewrite the doc from the last run's JSON")
    ap.add_argument("--only-durability", action="store_true",
                    help="measure only durable writes, the baseline and the big-snapshot start; rewrite only their sections")
    ap.add_argument("--launch-only", action="store_true",
                    help="measure only the start time (bench --launches) and replace its section in the existing doc")
    ap.add_argument("--baseline-bin", help="an already built baseline binary (skips building --baseline-commit)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(IMG, exist_ok=True)
    if args.render_only:
        load = lambda name: json.load(open(os.path.join(OUT, name + ".json")))  # noqa: E731
        shapes = [(s, w) for w in (1, 16) for s in (1, 4, 8, 32)]
        have = lambda name: os.path.exists(os.path.join(OUT, name + ".json"))  # noqa: E731
        durable = {k: load(f"durable-s{k[0]}-w{k[1]}") for k in DURABLE_SHAPES if have(f"durable-s{k[0]}-w{k[1]}")}
        baseline = {k: load(f"vs-baseline-s{k[0]}-w{k[1]}") for k in shapes if have(f"vs-baseline-s{k[0]}-w{k[1]}")}
        start = load("start-snapshot")["start_with_snapshot"] if have("start-snapshot") else None
        if args.only_durability:
            splice_durability(durable or None, baseline or None, start, args.baseline_commit)
            return
        if args.cluster_only:
            splice_cluster_section(load("cluster"))
            return
        if args.launch_only:
            splice_launch_section(load("launch")["launch"])
            return
        runs = {(s, w): load(f"vs-zk-s{s}-w{w}") for w in (1, 16) for s in (1, 4, 8, 32)}
        mem = load("memory") if os.path.exists(os.path.join(OUT, "memory.json")) else None
        prof = open(os.path.join(OUT, "profile.txt")).read()
        optional = lambda name: load(name) if os.path.exists(os.path.join(OUT, name + ".json")) else None  # noqa: E731
        write_doc(runs, load("digest-on-vs-off"), mem, prof, args, optional("kazoo-walltime"),
                  optional("java-crosscheck"), optional("watch-load"), durable or None, baseline or None, start,
                  optional("cluster"), (optional("launch") or {}).get("launch"))
        return
    # The baseline first: its build takes minutes, and a failure should come before the long runs.
    base_bin = None if args.no_baseline else (args.baseline_bin or build_baseline(args.baseline_commit))
    sh(["cargo", "build", "--release", "-q", "-p", "testkeeper"], cwd=ROOT)
    ops, rounds = (4000, 3) if args.quick else (20000, 5)
    if args.cluster_only:
        splice_cluster_section(stamped(cluster_bench(ops, rounds, java=not args.no_java)))
        return
    if args.launch_only:
        splice_launch_section(launches(LAUNCHES))
        return
    if args.only_durability:
        baseline = None if base_bin is None else baseline_matrix(base_bin, ops, rounds)
        durable = None if args.no_durable else durable_matrix(ops, rounds)
        start = None
        if args.start_znodes:
            start = start_with_snapshot(min(args.start_znodes, 100_000) if args.quick else args.start_znodes, 3)
        splice_durability(durable, baseline, start, args.baseline_commit)
        return
    # A skipped measurement drops the last run's files, so --render-only shows what this run measured.
    for f in os.listdir(OUT):
        if re.match(r"(durable-s|vs-baseline-s|start-snapshot).*\.json$", f):
            os.remove(os.path.join(OUT, f))
    baseline = None if base_bin is None else baseline_matrix(base_bin, ops, rounds)
    durable = None if args.no_durable else durable_matrix(ops, rounds)
    start = None
    if args.start_znodes:
        start = start_with_snapshot(min(args.start_znodes, 100_000) if args.quick else args.start_znodes, 3)
    launch = launches(LAUNCHES)
    runs = matrix(ops, rounds)
    for w, name in ((1, "throughput-sync.png"), (16, "throughput-pipelined.png")):
        files = [os.path.join(OUT, f"vs-zk-s{s}-w{w}.json") for (s, ww) in runs if ww == w]
        sh([BIN, "bench", "--plot", os.path.join(IMG, name), *files])
    digest = digest_overhead(ops * 2, rounds)
    mem = None
    if args.znodes:
        n = min(args.znodes, 100_000) if args.quick else args.znodes
        mem = bench("memory", "--spawn-testkeeper", "--spawn-zookeeper", "--ops", 1000, "--rounds", 1,
                    "--znodes", n)
    # A skipped check drops the last run's file, so --render-only shows what this run measured.
    for name in ("java-crosscheck.json", "kazoo-walltime.json", "watch-load.json", "cluster.json"):
        if os.path.exists(os.path.join(OUT, name)):
            os.remove(os.path.join(OUT, name))
    watch = None if args.no_watch_load else watch_load(20_000 if args.quick else 100_000, 1 if args.quick else 3)
    java = None if args.no_java else java_crosscheck(max(ops, 20000), 3)
    cluster = None if args.no_cluster else stamped(cluster_bench(ops, rounds, java=not args.no_java))
    # One round: the suite takes minutes per server and its time is mostly fixed sleeps.
    kazoo = None if args.no_kazoo else kazoo_walltime(1)
    prof = "not taken (--no-profile)" if args.no_profile else profile(6)
    with open(os.path.join(OUT, "profile.txt"), "w") as f:
        f.write(prof)
    write_doc(runs, digest, mem, prof, args, kazoo, java, watch, durable, baseline, start, cluster, launch)


if __name__ == "__main__":
    main()
