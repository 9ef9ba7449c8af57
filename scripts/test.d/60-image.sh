#!/usr/bin/env bash
# scripts/test.d/60-image.sh — stage of scripts/test: builds the container image with the project's
# Dockerfile (podman, chroot isolation) and runs fathomd from it (tests/image/test_image.sh).
# Prints "SKIPPED: ..." and passes where podman and debootstrap cannot be installed or the
# machine is not ours to run them (not root); FATHOM_SKIP_IMAGE_TEST=1 skips it on purpose.
# Takes about 4 minutes on a new machine (debootstrap, the build stage's packages, a full
# build) and about 40 s after that (the base and the package layers are cached).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
start=$(date +%s)
bash "$root/tests/image/test_image.sh"
echo "image stage: $(($(date +%s) - start)) s"
