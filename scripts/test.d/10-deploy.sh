#!/usr/bin/env bash
# scripts/test.d/10-deploy.sh — stage of scripts/test: the Kubernetes manifests in deploy/ parse and
# agree with fathomd (tests/deploy/test_manifests.py; starts build/fathomd on a loopback port).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

# The test reads YAML with Debian's python3-yaml (the system python3, not a virtualenv's).
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  echo "deploy: installing python3-yaml" >&2
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null
fi
[ -x build/fathomd ] || cmake --build build -j"$(nproc)" --target fathomd >/dev/null

FATHOMD="$root/build/fathomd" FATHOM_SOURCE="$root" /usr/bin/python3 -m unittest -v tests/deploy/test_manifests.py
