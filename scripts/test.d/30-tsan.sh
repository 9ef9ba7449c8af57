#!/usr/bin/env bash
# ThreadSanitizer on the worker pool and the cache: fathomd built with -fsanitize=thread serves
# concurrent requests and sweeps; a data race makes it exit non-zero, which fails the test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFATHOM_TSAN=ON >/dev/null
cmake --build "$root/build-tsan" -j"$(nproc)" --target fathomd fathom >/dev/null
cd "$root/tests/api"
export FATHOMD="$root/build-tsan/fathomd" FATHOM_CLI="$root/build-tsan/fathom" FATHOM_SOURCE="$root"
export FATHOM_TEST_SLOWDOWN=10
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1"
/usr/bin/python3 -m unittest -v test_concurrency test_sweeps.Sweeps test_sweeps.Limits 2>&1 | tail -n 40
