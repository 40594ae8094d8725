#!/usr/bin/env python3
"""Regenerate docs/performance.md and docs/img/*.png: testkeeper vs Apache ZooKeeper 3.8.

Every figure is a ratio measured in this one run, on this machine: both servers are started
here (`testkeeper bench --spawn-testkeeper --spawn-zookeeper`: the release build of this
repo's binary, and Debian's ZooKeeper 3.8 with forceSync=no, each on a free loopback port),
and rounds alternate between them so a noisy machine hurts both alike.

Usage:
    scripts/bench-report.py [--quick] [--znodes N] [--no-profile] [--render-only]

--quick runs fewer ops and rounds (a smoke run, ~2 minutes); the committed report is the
default run. --render-only rewrites the doc from the last run's files (after editing
scripts/bench-report-notes.md, say) without measuring again. The raw JSON of every run stays in target/bench-report/.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "target", "bench-report")
BIN = os.path.join(ROOT, "target", "release", "testkeeper")
DOC = os.path.join(ROOT, "docs", "performance.md")
IMG = os.path.join(ROOT, "docs", "img")
WRITE_MIX = "create=25,set=50,delete=25"


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


def matrix(ops, rounds):
    """Throughput and p99 against ZooKeeper at several session counts, sync and pipelined."""
    runs = {}
    for pipeline in (1, 16):
        for sessions in (1, 4, 8, 32):
            name = f"vs-zk-s{sessions}-w{pipeline}"
            runs[(sessions, pipeline)] = bench(name, "--spawn-testkeeper", "--spawn-zookeeper", "--sessions",
                                               sessions, "--pipeline", pipeline, "--ops", ops, "--rounds", rounds)
    return runs


def digest_overhead(ops, rounds):
    """Digest on (spawned) vs off (a `serve --no-digest` started here), write-only mix."""
    off = Serve("--no-digest")
    try:
        return bench("digest-on-vs-off", "--spawn-testkeeper", "--vs", off.addr, "--sessions", 8, "--pipeline", 16,
                     "--ops", ops, "--rounds", rounds, "--mix", WRITE_MIX)
    finally:
        off.stop()


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


def fmt_ratio(x, digits=2):
    return f"{x:.{digits}f}x"


def write_doc(runs, digest, mem, prof, args):
    def vs(r):
        return r["summary"]["vs"]

    def med(r, label, key):
        return next(t[key] for t in r["summary"]["targets"] if t["label"] == label)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
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
    L.append("## Start time\n")
    tk = [r["targets"][0]["launch_to_imok_ms"] for r in runs.values()]
    zk = [r["targets"][1]["launch_to_imok_ms"] for r in runs.values()]
    tk_m, zk_m = sorted(tk)[len(tk) // 2], sorted(zk)[len(zk) // 2]
    emb = runs[(1, 1)]["embedded_start"]["start_to_imok_ms_median"]
    L.append(f"Spawn of the process to the first `imok` answer to `ruok` (polled every 1 ms), median of the "
             f"{len(tk)} starts in this report:\n")
    L.append(f"- `testkeeper serve`: {tk_m:.1f} ms; ZooKeeper JVM: {zk_m:.0f} ms: **{zk_m / tk_m:.0f}x faster** "
             f"(ratio {fmt_ratio(tk_m / zk_m, 4)})")
    L.append(f"- Embedded (`TestKeeper::start` in-process to `imok`): {emb:.3f} ms, "
             f"**{zk_m / emb:.0f}x faster** than the ZooKeeper JVM\n")
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
    ap.add_argument("--render-only", action="store_true", help="rewrite the doc from the last run's JSON")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(IMG, exist_ok=True)
    if args.render_only:
        load = lambda name: json.load(open(os.path.join(OUT, name + ".json")))  # noqa: E731
        runs = {(s, w): load(f"vs-zk-s{s}-w{w}") for w in (1, 16) for s in (1, 4, 8, 32)}
        mem = load("memory") if os.path.exists(os.path.join(OUT, "memory.json")) else None
        prof = open(os.path.join(OUT, "profile.txt")).read()
        write_doc(runs, load("digest-on-vs-off"), mem, prof, args)
        return
    sh(["cargo", "build", "--release", "-q", "-p", "testkeeper"], cwd=ROOT)
    ops, rounds = (4000, 3) if args.quick else (20000, 5)
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
    prof = "not taken (--no-profile)" if args.no_profile else profile(6)
    with open(os.path.join(OUT, "profile.txt"), "w") as f:
        f.write(prof)
    write_doc(runs, digest, mem, prof, args)


if __name__ == "__main__":
    main()
