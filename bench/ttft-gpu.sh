#!/usr/bin/env bash
# One device call: build native/cuda, then TTFT at concurrency 1 stage by stage (bench/ttft-stages.ts)
# through `serve --device cuda --dtype bfloat16 --max-num-seqs 512` and in-process. Expects .gpu/ as
# bench/gpu.sh does. Logs and JSON in $1. To compare two commits in one call, run it in a copy of each tree.
set -uo pipefail
out=${1:-/tmp/ttft-out}
mkdir -p "$out"
# shellcheck source=bench/gpu-prepare.sh
source bench/gpu-prepare.sh
SERVE_ARGS='--device cuda --dtype bfloat16 --max-num-seqs 512' DIRECT=1 N=16 MAX_TOKENS=64 OUT="$out/ttft.json" \
  timeout 120 node --import tsx bench/ttft-stages.ts 2>&1 | tee "$out/ttft.log" | grep -v '^\s*{'
