#!/usr/bin/env bash
# scripts/deps.sh — installs the Debian packages Fathom needs, and only those that are missing.
# Usage: scripts/deps.sh run|test   ("run": build and serve; "test": everything the tests use)
set -euo pipefail

run_pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev
          libuv1-dev libsodium-dev libgsl-dev libnlopt-dev libcmocka-dev libpq-dev curl)
test_pkgs=(python3 python3-jsonschema python3-yaml sqlite3 postgresql valgrind clang libclang-rt-14-dev wrk)

want=("${run_pkgs[@]}")
if [ "${1:-run}" = test ]; then
  want+=("${test_pkgs[@]}")
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
echo "deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
