#!/usr/bin/env bash
# Container entrypoint (container/Dockerfile*). ERNIE_EDGE_ROLE picks what runs:
#   all (default)     the engine sidecar and the gateway as two processes sharing a Unix socket in a
#                     private 0700 directory; this script forwards signals and exits with them
#   gateway | sidecar one role, exec'd (Kubernetes runs one per container: container/k8s/)
# Extra arguments are passed to `ernie-edge serve` (both processes in `all`: each reads its flags).
# Environment: ERNIE_EDGE_MODEL (default: /models when /models/config.json exists, else the
# placeholder; a --model argument wins over both), ERNIE_EDGE_SERVED_MODEL_NAME (the name a model
# from there is served under unless --served-model-name is given; the placeholder keeps its own),
# ERNIE_EDGE_THREADS (the sidecar's --threads unless given: the manifests set it to the CPU limit),
# ERNIE_EDGE_HOST / ERNIE_EDGE_PORT (gateway address, default 0.0.0.0:8000), ERNIE_EDGE_BIN (default:
# the image's /app/bin/ernie-edge.js). The socket directory of `all` is made under TMPDIR (default
# /tmp): a --read-only container needs a tmpfs there.
#
# Signals in `all`: the first SIGTERM/SIGINT goes to the gateway, which drains (/ready 503, in-flight
# streams finish); once it has exited the sidecar gets SIGTERM. A second signal is passed to both
# (each exits at once). If either process dies on its own, the other is stopped and the script exits
# non-zero, so the container runtime restarts the pair. Exit 0 only after a clean signalled stop.
set -uo pipefail

bin=${ERNIE_EDGE_BIN:-/app/bin/ernie-edge.js}
role=${ERNIE_EDGE_ROLE:-all}
model=${ERNIE_EDGE_MODEL:-}
if [[ -z $model && -f /models/config.json ]]; then model=/models; fi
given() { # given FLAG ARGS...: whether ARGS hold --flag, --flag=… or its --snake_case spelling
  local flag=$1 snake=${1//-/_} a
  shift
  for a in "$@"; do
    case $a in "--$flag" | "--$flag="* | "--$snake" | "--$snake="*) return 0 ;; esac
  done
  return 1
}
model_args=()
if [[ -n $model ]] && ! given model "$@"; then
  model_args=(--model "$model")
  if [[ -n ${ERNIE_EDGE_SERVED_MODEL_NAME:-} ]] && ! given served-model-name "$@"; then
    model_args+=(--served-model-name "$ERNIE_EDGE_SERVED_MODEL_NAME")
  fi
fi
if [[ -n ${ERNIE_EDGE_THREADS:-} ]] && ! given threads "$@"; then model_args+=(--threads "$ERNIE_EDGE_THREADS"); fi

case $role in
  sidecar) exec node "$bin" serve --role sidecar "${model_args[@]}" "$@" ;;
  gateway) exec node "$bin" serve --role gateway --host "${ERNIE_EDGE_HOST:-0.0.0.0}" --port "${ERNIE_EDGE_PORT:-8000}" "$@" ;;
  all) ;;
  *) echo "entrypoint: ERNIE_EDGE_ROLE must be all, gateway or sidecar (got '$role')" >&2; exit 2 ;;
esac

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/ernie-edge.XXXXXX") || exit 1 # mode 0700: only we reach the socket
sock="$run_dir/engine.sock"
trap 'rm -rf "$run_dir"' EXIT

node "$bin" serve --role sidecar --engine "unix:$sock" "${model_args[@]}" "$@" &
sidecar=$!
node "$bin" serve --role gateway --engine "unix:$sock" --host "${ERNIE_EDGE_HOST:-0.0.0.0}" --port "${ERNIE_EDGE_PORT:-8000}" "$@" &
gateway=$!
echo "entrypoint: sidecar pid $sidecar, gateway pid $gateway, socket $sock" >&2

signals=0
# shellcheck disable=SC2317 # invoked by the traps below
on_signal() {
  signals=$((signals + 1))
  if ((signals == 1)); then
    echo "entrypoint: $1: draining the gateway, then stopping the sidecar" >&2
    kill -TERM "$gateway" 2>/dev/null
  else
    echo "entrypoint: $1 again: stopping both now" >&2
    kill -TERM "$gateway" "$sidecar" 2>/dev/null
  fi
}
trap 'on_signal SIGTERM' TERM
trap 'on_signal SIGINT' INT

# wait returns early (status > 128, no pid) when a trapped signal arrives: wait again until a child exits.
wait_for() { # wait_for PID... → sets $done_pid and $done_code
  done_pid=
  while [[ -z ${done_pid:-} ]]; do
    wait -n -p done_pid "$@" # unsets done_pid first
    done_code=$?
    if [[ -z ${done_pid:-} && $done_code == 127 ]]; then done_pid=gone; fi # no such child left
  done
}

wait_for "$gateway" "$sidecar"
if [[ $done_pid == "$gateway" ]]; then
  gateway_code=$done_code
  kill -TERM "$sidecar" 2>/dev/null
  wait_for "$sidecar"
  sidecar_code=$done_code
else
  sidecar_code=$done_code
  echo "entrypoint: the sidecar exited ($sidecar_code) on its own: stopping the gateway" >&2
  kill -TERM "$gateway" 2>/dev/null
  wait_for "$gateway"
  gateway_code=$done_code
fi
echo "entrypoint: gateway exited $gateway_code, sidecar exited $sidecar_code" >&2
if ((signals > 0 && gateway_code == 0 && sidecar_code == 0)); then exit 0; fi
if ((signals == 0)); then exit $((sidecar_code ? sidecar_code : gateway_code ? gateway_code : 1)); fi
exit $((gateway_code ? gateway_code : sidecar_code))
