#!/usr/bin/env bash
# scripts/build_web.sh — bundles the web page's third-party code: installs web/'s pinned npm
# packages (npm ci, from web/package-lock.json) and copies the charting library's browser build
# into static/vendor/ (git-ignored), where fathomd serves it. The page loads nothing from outside,
# so a cluster without internet access still draws charts. The Dockerfile runs this same script.
# Usage: scripts/build_web.sh [--prod]   (needs node and npm; idempotent)
#   --prod  skips the browser test's driver (playwright-core): what an image that only serves needs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v npm >/dev/null; then
  echo "build_web: npm is missing (apt-get install nodejs npm)" >&2
  exit 1
fi

omit=()
if [ "${1:-}" = "--prod" ]; then
  omit=(--omit=dev)
fi

cd "$root/web"
# npm ci is reproducible but slow; skip it when node_modules already holds this lock file's
# packages installed the same way.
stamp="$(sha256sum package-lock.json | cut -d' ' -f1) ${omit[*]:-all}"
if [ "$(cat node_modules/.fathom-stamp 2>/dev/null)" != "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error "${omit[@]}"
  echo "$stamp" > node_modules/.fathom-stamp
fi

vendor="$root/static/vendor"
mkdir -p "$vendor"
cp node_modules/chart.js/dist/chart.umd.min.js "$vendor/chart.umd.min.js"
cp node_modules/chart.js/LICENSE.md "$vendor/chart.js.LICENSE.md"
echo "build_web: static/vendor/ has Chart.js $(node -p "require('./node_modules/chart.js/package.json').version")"
