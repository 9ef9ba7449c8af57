#!/usr/bin/env bash
# bench/load.sh — load on fathomd over loopback with wrk: a mix of cached estimates, uncached
# estimates and sweep polls (bench/load.lua) at 64 and 256 connections, for a bounded time each.
# Prints requests per second, p50/p99 latency, errors, and the server's RSS before and after.
# Targets: zero errors; p99 under 10 ms at 64 connections on 2 cores; RSS growth under 10%.
# Usage: bench/load.sh [SECONDS per run, default 15]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-15}
command -v wrk >/dev/null || { echo "load: installing wrk" >&2; "$root/scripts/deps.sh" run; \
  ${SUDO:-$( [ "$(id -u)" -ne 0 ] && echo sudo )} apt-get install -y -qq wrk >/dev/null; }
[ -x "$root/build/fathomd" ] || { cmake -S "$root" -B "$root/build" >/dev/null && \
  cmake --build "$root/build" -j"$(nproc)" --target fathomd >/dev/null; }

tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
cd "$root"
"$root/build/fathomd" --listen 127.0.0.1:0 --db "$tmp/load.db" --threads "$(nproc)" \
  --max-per-ip 0 --log-level warn 2>"$tmp/log" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(grep -o '"port":[0-9]*' "$tmp/log" 2>/dev/null | head -1 | cut -d: -f2 || true)
  [ -n "$port" ] && break
  sleep 0.05
done
# The log level hides the "listening" line; ask the kernel instead.
if [ -z "$port" ]; then
  port=$(ss -ltnp 2>/dev/null | grep "pid=$pid," | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
fi
url="http://127.0.0.1:$port"
# Resident size once idle: fathomd hands freed memory back within a second of going idle.
rss() { sleep 2; awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

curl -s "$url/v1/estimate" -d '{"model":"gpt3-175B","system":"a100_80g","execution":{"num_procs":1024,"tensor_par":8,"pipeline_par":8,"data_par":16,"batch_size":1024,"pipeline_par_net":1,"data_par_net":1}}' >/dev/null
sweep=$(curl -s "$url/v1/sweep" -d '{"kind":"optimal_execution","model":"megatron-126M","system":"a100_80g","num_procs":8,"max_batch_size":64,"datatype":"float16"}' | sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p' | head -1)
[ -n "$sweep" ] || { echo "load: could not start the sweep to poll" >&2; exit 1; }
sleep 2 # let it finish: dashboards mostly poll finished sweeps
export FATHOM_SWEEP_ID=$sweep
# Warm-up: the same runs once, so RSS is measured after allocator arenas, SQLite's page caches
# and the hot-answer map have reached their working size; growth past that would be a leak.
for c in 64 256; do
  wrk -t1 -c"$c" -d"${seconds}s" -s "$root/bench/load.lua" "$url" >/dev/null
done
before=$(rss)
echo "fathomd on $url, $(nproc) cores; mix: 70% cached estimate, 5% uncached transformer, 25% sweep poll"
for c in 64 256; do
  printf '%4d connections, %ss: ' "$c" "$seconds"
  wrk -t1 -c"$c" -d"${seconds}s" --timeout 5s -s "$root/bench/load.lua" "$url" | tail -n 1
done
after=$(rss)
awk -v b="$before" -v a="$after" 'BEGIN { printf "RSS before %d kB, after %d kB (%+.1f%%)\n", b, a, 100 * (a - b) / b }'
