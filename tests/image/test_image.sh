#!/usr/bin/env bash
# tests/image/test_image.sh — builds the container image from the project's Dockerfile and runs
# fathomd out of it, on a machine with no container engine running (CI, the dev machines).
#
# No Docker daemon runs here and podman cannot start containers (its runtime may not set
# rlimits), so the image is built by podman with chroot isolation and run with chroot(8):
#   1. debootstrap --variant=minbase bookworm from the Debian mirror apt uses, imported as
#      docker.io/library/debian:bookworm-slim (the Dockerfile's base), cached across runs;
#   2. podman --cgroup-manager=cgroupfs build --isolation=chroot --network=host -t fathom:test;
#   3. podman create + podman export of the image into a folder;
#   4. tests/image/check_image.py: the image's configuration (non-root user, port, volume, env,
#      healthcheck), no compiler in the runtime stage, then fathomd started in the folder with
#      chroot --userspec=<the image's user>, with the image's environment, on a free loopback
#      port, as PID 1 of its own PID namespace (unshare --pid, as in a container): /healthz,
#      /readyz, the HEALTHCHECK command itself, an estimate checked against Calculon's numbers,
#      a sweep polled until done, SIGTERM to PID 1 → clean exit.
#
# Needs root (debootstrap, chroot) and the packages podman and debootstrap, which it installs
# when missing. When that is impossible it prints "SKIPPED: <reason>" and exits 0. Any other
# failure exits non-zero.
#
# Environment:
#   FATHOM_SKIP_IMAGE_TEST=1     skip (prints SKIPPED)
#   FATHOM_IMAGE_CACHE=DIR       where the base rootfs tarball and the last build log are kept
#                                (default /var/cache/fathom-image-test; outside the repository)
#   FATHOM_IMAGE_REFRESH=1       debootstrap again even if the cached rootfs is recent
#   FATHOM_IMAGE_CONTEXT=DIR     build context (default: the repository)
#   FATHOM_IMAGE_BUILD_ARGS=...  extra arguments to podman build (e.g. --build-arg JOBS=1)
#   FATHOM_IMAGE_CA_BUNDLE=FILE  CA bundle lent to the build stage's npm (default: the system's)
#   FATHOM_IMAGE_KEEP=1          keep the exported folder (its path is printed)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
context=${FATHOM_IMAGE_CONTEXT:-$root}
cache=${FATHOM_IMAGE_CACHE:-/var/cache/fathom-image-test}
image=fathom:test
base=docker.io/library/debian:bookworm-slim
suite=bookworm
t0=$(date +%s)

skip() {
  echo "SKIPPED: image test: $*"
  exit 0
}
step() {
  printf '[image %4ss] %s\n' "$(($(date +%s) - t0))" "$*"
}
die() {
  echo "FAILED: image test: $*" >&2
  exit 1
}

[ -z "${FATHOM_SKIP_IMAGE_TEST:-}" ] || skip "FATHOM_SKIP_IMAGE_TEST is set"
[ "$(uname -s)" = Linux ] || skip "not Linux"
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, podman build --isolation=chroot and chroot do)"
command -v apt-get >/dev/null || skip "no apt-get to install podman and debootstrap"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (scripts/deps.sh test installs it)"

# ---- 1. tools ----
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  step "installing ${missing[*]}"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
           "${missing[@]}"; } >"${TMPDIR:-/tmp}/fathom-image-apt.log" 2>&1; then
    tail -5 "${TMPDIR:-/tmp}/fathom-image-apt.log" >&2
    skip "podman and debootstrap are not installable here (apt-get install ${missing[*]} failed)"
  fi
fi
mkdir -p "$cache"

# The Debian mirror apt uses: the first "deb" source for $suite (not -security, not -updates)
# in /etc/apt/sources.list, *.list or deb822 *.sources; deb.debian.org when there is none.
debian_mirror() {
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      # deb [options] URI SUITE COMPONENTS...
      sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk -v s="$suite" '$1 == "deb" && $3 == s { print $2 }'
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      # deb822 stanzas separated by blank lines: Types, URIs, Suites, (Enabled).
      awk -v s="$suite" '
        function flush() {
          if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " s " ") && enabled != "no")
            { split(uris, u, " "); print u[1] }
          types = uris = suites = ""; enabled = "yes"
        }
        BEGIN { enabled = "yes" }
        /^[ \t]*#/ { next }
        /^[ \t]*$/ { flush(); next }
        { key = tolower($1); $1 = ""; sub(/^ +/, "") }
        key == "types:" { types = $0 }
        key == "uris:" { uris = $0 }
        key == "suites:" { suites = $0 }
        key == "enabled:" { enabled = tolower($0) }
        END { flush() }' "$f"
    done
  } | head -n1
}
mirror=$(debian_mirror)
mirror=${mirror:-http://deb.debian.org/debian}

# ---- 2. base image: a minbase debootstrap, cached as a tarball ----
arch=$(dpkg --print-architecture)
tarball="$cache/debian-$suite-minbase-$arch.tar"
if [ -n "${FATHOM_IMAGE_REFRESH:-}" ] || [ ! -s "$tarball" ] ||
   [ -n "$(find "$tarball" -mtime +30 2>/dev/null)" ]; then
  step "debootstrap --variant=minbase $suite from $mirror"
  rootfs=$(mktemp -d "$cache/rootfs.XXXXXX")
  if ! debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1; then
    tail -20 "$cache/debootstrap.log" >&2
    rm -rf "$rootfs"
    die "debootstrap failed (log: $cache/debootstrap.log)"
  fi
  # What a base image does not carry: downloaded packages and apt's lists.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
  rm -rf "$rootfs"
fi
# Import only when the base image is missing or came from another tarball: a new import gets a
# new image id, which would throw away podman's layer cache of the build stage (apt + Node).
sum=$(sha256sum "$tarball" | cut -c1-64)
have=$(podman image inspect --format '{{index .Labels "fathom.rootfs.sha256"}}' "$base" 2>/dev/null || true)
if [ "$have" != "$sum" ]; then
  step "podman import $tarball as $base"
  podman import --change 'CMD ["bash"]' --change "LABEL fathom.rootfs.sha256=$sum" - "$base" \
    <"$tarball" >/dev/null
fi

# ---- 3. build ----
# --format docker: the OCI image format has no HEALTHCHECK field (podman drops it with a warning).
# The build host's CA bundle goes to the build stage's npm as a secret (see the Dockerfile): on a
# network that re-signs TLS, npm then trusts what this machine trusts.
build_opts=(--format docker)
ca_bundle=${FATHOM_IMAGE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ ! -s "$ca_bundle" ] || build_opts+=(--secret "id=build_ca,src=$ca_bundle")
step "podman build -t $image $context (log: $cache/build.log)"
# shellcheck disable=SC2086  # FATHOM_IMAGE_BUILD_ARGS is a list of words on purpose
if ! podman --cgroup-manager=cgroupfs build --isolation=chroot --network=host "${build_opts[@]}" \
       ${FATHOM_IMAGE_BUILD_ARGS:-} -t "$image" "$context" >"$cache/build.log" 2>&1; then
  tail -40 "$cache/build.log" >&2
  die "podman build failed (whole log: $cache/build.log)"
fi
grep -E '^[0-9]+% tests passed' "$cache/build.log" | tail -1 |
  sed 's/^/  unit tests in the build stage: /' || true
# Each build with changed sources leaves the previous build's layers behind, untagged: drop those
# older than a day (the layers this build used are younger or have children, so they stay cached).
podman image prune -f --filter until=24h >/dev/null 2>&1 || true
size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "$base")
echo "  image $image: $((size / 1000000)) MB ($((base_size / 1000000)) MB of it the debootstrapped base)"

# ---- 4. export and run ----
work=$(mktemp -d /var/tmp/fathom-image.XXXXXX)
# The exported folder goes on a tmpfs of its own when possible: writing and deleting its 135 MB
# of small files on this machine's disk takes about 20 s.
mounted=
if mount -t tmpfs -o size=2g,mode=0755 fathom-image "$work" 2>/dev/null; then
  mounted=1
fi
cid=
cleanup() {
  [ -z "$cid" ] || podman rm -f "$cid" >/dev/null 2>&1 || true
  if [ -n "${FATHOM_IMAGE_KEEP:-}" ]; then
    echo "kept: $work${mounted:+ (a tmpfs: umount it when done)}"
  else
    [ -z "$mounted" ] || umount "$work" || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT
podman image inspect "$image" >"$work/inspect.json"
cid=$(podman create --network=none --no-healthcheck "$image")
mkdir "$work/rootfs"
podman export "$cid" | tar -C "$work/rootfs" -x
podman rm "$cid" >/dev/null
cid=
step "exported to $work/rootfs ($(du -sh "$work/rootfs" | cut -f1)); checking and running fathomd in it"

/usr/bin/python3 "$root/tests/image/check_image.py" --rootfs "$work/rootfs" \
  --inspect "$work/inspect.json" --source "$root" --context "$context"
step "image test passed in $(($(date +%s) - t0)) s"
