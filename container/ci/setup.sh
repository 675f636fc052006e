#!/usr/bin/env bash
# CI's container set-up, before `npm test`: prints `export …` lines for the container tests
# (test/deploy/container.e2e.test.ts): the engine that works here and, without Docker, the locally made
# bases. With neither podman installable nor Docker answering it prints ERNIE_EDGE_CONTAINER_ENGINE=none
# and why, and the container tests say they are skipped.
#   eval "$(bash container/ci/setup.sh)"
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
if ! engine=$(bash "$here/prepare-podman.sh"); then
  echo "container/ci/setup.sh: no container engine here: the container tests will be skipped" >&2
  echo "export ERNIE_EDGE_CONTAINER_ENGINE=none"
  exit 0
fi
echo "export ERNIE_EDGE_CONTAINER_ENGINE=$engine"
if [[ $engine == podman ]]; then
  bash "$here/make-base.sh" podman >/dev/null || exit 1
fi
echo "container/ci/setup.sh: $engine ready in $(($(date +%s) - start)) s" >&2
