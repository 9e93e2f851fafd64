#!/usr/bin/env bash
# Prints the tag of the Debian 12 systemd base image the container tests boot, building it
# first when missing. Content-keyed exactly as scripts/molecule.sh does it
# (superpod-debian12:<hash of molecule/image/*>), so both reuse one image.
# Usage: scripts/ensure-image.sh [--no-build]   (needs dockerd; building needs debootstrap and root)
#   --no-build: exit 1 when the image is missing (test.sh waits on molecule.sh building it)
set -euo pipefail
cd "$(dirname "$0")/.."
key=$(cd molecule/image && cat $(ls | sort) | sha256sum | cut -c1-12)
tag=${MOLECULE_IMAGE:-superpod-debian12:$key}
if ! docker image inspect "$tag" >/dev/null 2>&1; then
  [[ "${1:-}" == "--no-build" ]] && exit 1
  echo "building base image $tag (debootstrap)" >&2
  molecule/image/build-image.sh "$tag" >&2
fi
echo "$tag"
