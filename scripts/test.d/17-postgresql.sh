#!/usr/bin/env bash
# The API tests against PostgreSQL, then the replica tests (test_replicas: three fathomd on one
# database, a SIGKILL, a cancel across replicas, a server restart). A throw-away cluster is
# initialised in a temporary directory as an unprivileged user (scripts/pg_cluster.sh), on
# loopback at a free port, and stopped and removed on any exit. The slow-labelled tests (the
# 100,000-point download) are left out here as in the sanitizer pass: they test SQLite-sized I/O,
# not the backend.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$root/build/fathomd" ] || { echo "SKIPPED: build/fathomd is not built"; exit 0; }
started=$(date +%s)
dir=$(mktemp -d /tmp/fathom-pg-XXXXXX)
cleanup() {
  "$root/scripts/pg_cluster.sh" stop "$dir" || true
  rm -rf "$dir"
}
trap cleanup EXIT
dsn=$("$root/scripts/pg_cluster.sh" start "$dir")
echo "PostgreSQL at $dsn"
export FATHOM_TEST_DB="$dsn" FATHOM_TEST_PG_DIR="$dir"
ctest --test-dir "$root/build" --output-on-failure -j"$(nproc)" -L api -LE slow -E api_test_replicas
# Alone: it stops and restarts the server the others use.
ctest --test-dir "$root/build" --output-on-failure -R api_test_replicas
echo "postgresql stage: $(( $(date +%s) - started )) s"
