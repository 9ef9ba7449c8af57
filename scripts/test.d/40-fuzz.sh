#!/usr/bin/env bash
# scripts/test.d/40-fuzz.sh — the libFuzzer stage of scripts/test: builds build-fuzz with clang
# (codec and core compiled with -fsanitize=fuzzer-no-link,address,undefined; see
# tests/fuzz/CMakeLists.txt), runs every fuzz target for FATHOM_FUZZ_SECONDS seconds (default 30
# when CI=true, 10 otherwise; as many targets at once as there are cores) on a temporary copy of
# its seed corpus (tests/fuzz/corpus/<target>/; nothing new is written into the repository), then
# replays tests/fuzz/regressions/<target>/.
# Any crash, leak, timeout, out-of-memory or sanitizer report fails the stage (exit 1); the
# reproducer and the log are kept under $FATHOM_FUZZ_OUT (default build-fuzz/findings/).
# FATHOM_FUZZ_TARGETS="model estimate" runs only those targets.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
start=$(date +%s)

if [ "${CI:-}" = true ]; then
  seconds=${FATHOM_FUZZ_SECONDS:-30}
else
  seconds=${FATHOM_FUZZ_SECONDS:-10}
fi
build=${FATHOM_FUZZ_BUILD:-$root/build-fuzz}
out=${FATHOM_FUZZ_OUT:-$build/findings}

command -v clang >/dev/null || { echo "fuzz: clang is missing (scripts/deps.sh test)" >&2; exit 1; }
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFATHOM_FUZZ=ON \
  -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz >/dev/null
built=$(date +%s)

targets=${FATHOM_FUZZ_TARGETS:-$(cat "$build/fuzz_targets.txt")}
work=$(mktemp -d "${TMPDIR:-/tmp}/fathom-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# Leaks are checked by libFuzzer itself (-detect_leaks=1, the default with ASan); these make
# every other report fatal and symbolized.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: fuzz it on a copy of its corpus, replay its past findings, and leave a summary line
# in $out/$t/summary and "ok" (or why not) in $out/$t/status.
fuzz_target() {
  local t=$1 bin="$build/tests/fuzz/fuzz_$1" status=ok
  mkdir -p "$work/$t" "$out/$t"
  if [ ! -x "$bin" ]; then
    echo "missing" >"$out/$t/status"
    printf '%-18s %8s %10s %8s %s\n' "$t" - - - "FAILED (no target in $build)" >"$out/$t/summary"
    return
  fi
  [ -d "tests/fuzz/corpus/$t" ] && cp -r "tests/fuzz/corpus/$t/." "$work/$t/"
  local log="$out/$t/fuzz.log"
  # -fork is not used: one process, so a finding stops the target at once with its reproducer.
  if ! "$bin" "$work/$t" -dict=tests/fuzz/fathom.dict -max_total_time="$seconds" \
       -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$out/$t/" >"$log" 2>&1; then
    status=FAILED
  fi
  local runs rate cov reg="tests/fuzz/regressions/$t"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ "$status" = ok ] && [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    # Replays each past finding once; none may fail again.
    if ! "$bin" -runs=1 "$reg"/* >"$out/$t/regressions.log" 2>&1; then
      status="FAILED (regressions, see $out/$t/regressions.log)"
    fi
  fi
  printf '%-18s %8s %10s %8s %s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$status" \
    >"$out/$t/summary"
  echo "$status" >"$out/$t/status"
}

# As many targets at once as there are cores: each still gets its seconds, the stage half the
# wall time on two cores.
jobs=$(nproc)
running=0
for t in $targets; do
  fuzz_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
printf '%-18s %8s %10s %8s %s\n' target runs exec/s cov result
for t in $targets; do
  cat "$out/$t/summary"
  status=$(cat "$out/$t/status")
  if [ "$status" != ok ]; then
    failed+=("$t")
    shown="$out/$t/fuzz.log"
    grep -q regressions <<<"$status" && shown="$out/$t/regressions.log"
    if [ -f "$shown" ]; then
      grep -E 'ERROR|SUMMARY|runtime error|^fuzz:|^gsl:|Running: |Test unit written' "$shown" |
        head -8 | sed 's/^/    /' || true
    fi
  fi
done

end=$(date +%s)
echo "fuzz: build $((built - start)) s, fuzzing $((end - built)) s, total $((end - start)) s" \
     "(${seconds} s per target)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (logs and reproducers in $out)" >&2
  exit 1
fi
