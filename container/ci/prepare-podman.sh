#!/usr/bin/env bash
# Makes this machine able to build and run the images, printing the engine's name on stdout: `docker`
# when a Docker daemon answers, else `podman`, installed and configured for a Debian 12 VM without a
# Docker engine or registry access (what CI runs on). Idempotent; needs root for the podman set-up.
#   engine=$(bash container/ci/prepare-podman.sh)
# What the podman set-up does, and why:
#   - packages podman buildah runc debootstrap uidmap (debootstrap: container/ci/make-base.sh);
#   - /etc/containers/containers.conf: runtime runc (crun refuses this VM's hybrid cgroups), and
#     default_ulimits at the current hard limits (root here lacks CAP_SYS_RESOURCE, so podman's default
#     of raising nofile/nproc past them fails every container start);
#   - short image names resolve to local images only (no registry is reachable).
set -euo pipefail

log() { echo "prepare-podman: $*" >&2; }

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  echo docker
  exit 0
fi

need=()
for cmd in podman buildah runc debootstrap newuidmap; do command -v "$cmd" >/dev/null || need+=("$cmd"); done
if ((${#need[@]})); then
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    log "missing ${need[*]} and cannot install them (needs root and apt-get)"
    exit 1
  fi
  log "installing podman buildah runc debootstrap uidmap"
  # Another apt (unattended upgrades, a parallel job) may hold the lock: wait for it.
  while fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock >/dev/null 2>&1; do sleep 2; done
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc debootstrap uidmap >/dev/null
fi

if [[ $(id -u) == 0 ]]; then
  conf=/etc/containers/containers.conf
  nofile=$(ulimit -Hn)
  want="# Written by ernie-edge container/ci/prepare-podman.sh
[containers]
default_ulimits = [\"nofile=${nofile}:${nofile}\", \"nproc=32768:32768\"]

[engine]
runtime = \"runc\""
  if [[ ! -f $conf ]] || [[ $(cat "$conf") != "$want" ]]; then
    [[ -f $conf ]] && ! grep -q 'ernie-edge container/ci/prepare-podman.sh' "$conf" && cp "$conf" "$conf.before-ernie-edge"
    printf '%s\n' "$want" >"$conf"
    log "wrote $conf"
  fi
  reg=/etc/containers/registries.conf.d/50-ernie-edge-local.conf
  if [[ ! -f $reg ]]; then
    mkdir -p "$(dirname "$reg")"
    printf '# Written by ernie-edge container/ci/prepare-podman.sh: short names are local images only.\nunqualified-search-registries = ["localhost"]\n' >"$reg"
    log "wrote $reg"
  fi
fi

podman info >/dev/null
echo podman
