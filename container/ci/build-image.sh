#!/usr/bin/env bash
# Builds container/Dockerfile as TAG with ENGINE (podman or docker) and prints what CI reports: the
# build time and the image size. Bases: the local ones of make-base.sh when they exist (CI, no
# registry), else the Dockerfile's digest-pinned node:24 images.
#   bash container/ci/build-image.sh podman localhost/ernie-edge:ci
set -euo pipefail
engine=${1:?engine}
tag=${2:?tag}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
base=localhost/ernie-edge-base:node$NODE24_VERSION-$DEBIAN_SUITE
args=()
if "$engine" image inspect "$base-slim" >/dev/null 2>&1 && "$engine" image inspect "$base-build" >/dev/null 2>&1; then
  args=(--build-arg "NODE_IMAGE=$base-slim" --build-arg "BUILD_IMAGE=$base-build")
  echo "build-image: bases $base-slim, $base-build (made by container/ci/make-base.sh)" >&2
fi
# podman: the docker format, whose config keeps HEALTHCHECK (OCI image configs have no such field).
[[ $engine == podman ]] && args+=(--format docker)
start=$(date +%s%N)
"$engine" build "${args[@]}" -f "$root/container/Dockerfile" -t "$tag" "$root" >&2
end=$(date +%s%N)
bytes=$("$engine" image inspect --format '{{.Size}}' "$tag")
printf 'build-image: %s built in %d.%d s, %d MB (%d bytes)\n' "$tag" "$(((end - start) / 1000000000))" "$(((end - start) / 100000000 % 10))" "$((bytes / 1000000))" "$bytes" >&2
