#!/usr/bin/env bash
# The API tests again with fathomd under valgrind memcheck: any memory error or definite leak
# makes fathomd exit 99 at shutdown, which fails the test that stopped it. Sweeps that run
# millions of executions and SIGKILL tests are left to the other stages (valgrind is ~50× slower).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/tests/api"
export FATHOMD="$root/build/fathomd" FATHOM_CLI="$root/build/fathom" FATHOM_SOURCE="$root"
export FATHOM_TEST_SLOWDOWN=30
export FATHOM_TEST_WRAPPER="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-fds=no"
/usr/bin/python3 -m unittest -v test_core test_estimate test_sweeps.Sweeps 2>&1 | tail -n 40
