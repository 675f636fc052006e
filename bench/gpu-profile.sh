#!/usr/bin/env bash
# One device call: build native/cuda, then time where a step's time goes (ERNIE_CUDA_PROFILE, see
# native/cuda/src/profiler.h): one stream with graphs timed whole, one stream op by op, and the
# engine's random workload at concurrency 256 op by op. Expects .gpu/ as bench/gpu.sh does.
set -uo pipefail
out=${1:-/tmp/gpu-prof}
mkdir -p "$out"
# shellcheck source=bench/gpu-prepare.sh
source bench/gpu-prepare.sh
run() { # name, profile mode, args...
  local name=$1 mode=$2; shift 2
  ERNIE_CUDA_PROFILE=$mode timeout 200 node --import tsx bench/gpu-profile.ts "$@" > "$out/$name.log" 2>&1
  echo "== $name ($mode)"; grep -E "^single|^batch|cuda profile" "$out/$name.log" | cut -c1-300
}
[ "${TESTS:-1}" = 1 ] && { timeout 300 node node_modules/vitest/vitest.mjs run test/engine/cuda.test.ts > "$out/tests.log" 2>&1; echo "tests exit $?"; grep -E "\[cuda\]|×|FAIL|Error|expected" "$out/tests.log" | head -60; tail -5 "$out/tests.log"; }
run single-graph graph single
FAST=1 run single-graph-fast graph single
[ "${OPS:-0}" = 1 ] && run single-ops 1 single
run batch-graph graph batch ${CONC:-256}
FAST=1 run batch-graph-fast graph batch ${CONC:-256}
run batch-ops 1 batch ${CONC:-256}
