#!/usr/bin/env bash
# A bench run against the leader (ON=follower: a follower; ON=all: every member, the followers
# first, as `bench --cluster` places sessions) of three `serve --peers` processes on loopback,
# in memory; MIX is bench's --mix (default create=25,set=50,delete=25):
#   [MIX=get=100] [ON=follower|all] scripts/cluster-processes-bench.sh BIN SESSIONS [serve flags...]
# e.g. scripts/cluster-processes-bench.sh target/release/testkeeper 1 --threads 2
# Prints bench's median line, then the three nodes' CPU time for the whole run (utime + stime,
# clock ticks, from /proc: less noisy than ops/s on a shared machine). SYSCALLS=1 also counts,
# with `perf stat` over 2 s from 1.5 s into the bench, each node's sendto calls (what a node
# sends: its clients' replies and its raft frames; docs/cluster.md "Batching"), epoll_waits and
# context switches (each a wake-up; docs/cluster.md "Same-host peers"), and prints each per
# write as well.
# The nodes are this script's children, stopped by PID at the end.
# The figures in docs/cluster.md ("Threads") come from it; `bench --cluster` is the report's.
set -euo pipefail
bin=$1 sessions=$2
shift 2
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
peers="1=127.0.0.1:$(free_port),2=127.0.0.1:$(free_port),3=127.0.0.1:$(free_port)"
for i in 1 2 3; do
  "$bin" serve --listen 127.0.0.1:0 --id "$i" --peers "$peers" --seed 7 "$@" >"$dir/node$i.out" 2>"$dir/node$i.err" &
  pids+=($!)
done
leader="" follower=""
for _ in $(seq 100); do
  for i in 1 2 3; do
    addr=$(sed -n 's/^testkeeper listening on //p' "$dir/node$i.out" 2>/dev/null || true)
    [ -n "$addr" ] || continue
    state=$(python3 - "$addr" <<'PY' || true
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=2)
s.sendall(b"mntr")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
for line in out.decode().splitlines():
    if line.startswith("zk_server_state"):
        print(line.split()[1])
PY
)
    if [ "$state" = leader ]; then leader=$addr; elif [ "$state" = follower ]; then follower="$follower${follower:+,}$addr"; fi
  done
  [ -n "$leader" ] && [ "$follower" != "${follower/,/}" ] && break
  leader="" follower=""
  sleep 0.1
done
[ -n "$leader" ] || { echo "no leader; logs in $dir" >&2; cat "$dir"/node*.err >&2; exit 1; }
target=$leader
case "${ON:-leader}" in
  follower) target=${follower%%,*} ;;
  all) target="$follower,$leader" ;;
esac
"$bin" bench --target "$target" --mix "${MIX:-create=25,set=50,delete=25}" --sessions "$sessions" --rounds 3 --ops 30000 --seed 7 >"$dir/bench.out" 2>&1 &
bench=$!
if [ "${SYSCALLS:-0}" = 1 ]; then
  sleep 1.5
  for i in 1 2 3; do
    perf stat -e syscalls:sys_enter_sendto,syscalls:sys_enter_epoll_wait,context-switches \
      -p "${pids[$((i - 1))]}" -o "$dir/perf$i" -- sleep 2 &
  done
  perf stat -e syscalls:sys_enter_sendto -p "$bench" -o "$dir/perf-bench" -- sleep 2
  sleep 0.2
fi
wait "$bench"
grep median "$dir/bench.out"
ticks=0
for p in "${pids[@]}"; do
  read -r -a f <"/proc/$p/stat"
  ticks=$((ticks + f[13] + f[14]))
done
echo "nodes' cpu ticks: $ticks"
if [ "${SYSCALLS:-0}" = 1 ]; then
  # The bench sends one request per write: its count is the writes in those 2 s.
  writes=$(awk '/sys_enter_sendto/ {gsub(",", "", $1); print $1}' "$dir/perf-bench")
  echo "bench sendto in 2 s: $writes"
  for i in 1 2 3; do
    addr=$(sed -n 's/^testkeeper listening on //p' "$dir/node$i.out")
    role=follower
    [ "$addr" = "$leader" ] && role=leader
    awk -v node="$i" -v role="$role" -v w="$writes" '
      /sys_enter_sendto/ {gsub(",", "", $1); s = $1}
      /sys_enter_epoll_wait/ {gsub(",", "", $1); e = $1}
      /context-switches/ {gsub(",", "", $1); c = $1}
      END {printf "node %s (%s) in 2 s: sendto %s, epoll_wait %s, context switches %s; per write %.2f, %.2f, %.2f\n",
           node, role, s, e, c, s / w, e / w, c / w}' "$dir/perf$i"
  done
fi
