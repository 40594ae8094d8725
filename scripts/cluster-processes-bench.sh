#!/usr/bin/env bash
# A bench run against the leader (ON=follower: a follower; ON=all: every member, the followers
# first, as `bench --cluster` places sessions) of three `serve --peers` processes on loopback,
# in memory; MIX is bench's --mix (default create=25,set=50,delete=25):
#   [MIX=get=100] [ON=follower|all] scripts/cluster-processes-bench.sh BIN SESSIONS [serve flags...]
# e.g. scripts/cluster-processes-bench.sh target/release/testkeeper 1 --threads 2
# Prints bench's median line. The nodes are this script's children, stopped by PID at the end.
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
"$bin" bench --target "$target" --mix "${MIX:-create=25,set=50,delete=25}" --sessions "$sessions" --rounds 3 --ops 30000 --seed 7 2>&1 | grep median
