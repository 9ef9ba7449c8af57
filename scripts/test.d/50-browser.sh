#!/usr/bin/env bash
# scripts/test.d/50-browser.sh — the web page in a real browser (tests/browser/test_page.mjs):
# installs Debian's chromium and node/npm if missing, bundles the page's npm packages
# (scripts/build_web.sh), and runs the test against build/fathomd (brought up to date here;
# FATHOMD=path overrides). Screenshots: tests/out/browser/. Exits non-zero if any step fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "browser: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! "$root/scripts/build_web.sh"; then
  # Without the npm registry there is no chart library and no playwright: say so plainly rather
  # than fail the whole suite on a machine that cannot reach it.
  if ! timeout 30 npm ping >/dev/null 2>&1; then
    echo "browser: SKIPPED: the npm registry cannot be reached, so the page's bundle and playwright-core cannot be installed"
    exit 0
  fi
  exit 1
fi

# The page and the server ship together: test against an up-to-date build/fathomd (scripts/test
# has just built it; standalone, this brings it up to date) unless FATHOMD names another.
fathomd=${FATHOMD:-}
if [ -z "$fathomd" ]; then
  [ -f "$root/build/CMakeCache.txt" ] || cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$root/build" -j"$(nproc)" --target fathomd >/dev/null
  fathomd=$root/build/fathomd
fi

FATHOMD="$fathomd" node "$root/tests/browser/test_page.mjs"
