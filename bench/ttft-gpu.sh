#!/usr/bin/env bash
# One device call: build native/cuda, then TTFT at concurrency 1 stage by stage (bench/ttft-stages.ts)
# through `serve --device cuda --dtype bfloat16 --max-num-seqs 512` and in-process. Expects .gpu/ as
# bench/gpu.sh does. Logs and JSON in $1. To compare two commits in one call, run it in a copy of each tree.
set -uo pipefail
out=${1:-/tmp/ttft-out}
mkdir -p "$out"
source .gpu/setup.sh
tar -xJf .gpu/nm.tar.xz
mkdir -p native/build/Release && cp .gpu/ernie_native.node native/build/Release/
bash native/cuda/build.sh > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
SERVE_ARGS='--device cuda --dtype bfloat16 --max-num-seqs 512' DIRECT=1 N=16 MAX_TOKENS=64 OUT="$out/ttft.json" \
  timeout 120 node --import tsx bench/ttft-stages.ts 2>&1 | tee "$out/ttft.log" | grep -v '^\s*{'
