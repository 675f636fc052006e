#!/usr/bin/env bash
# Issue #23's serving proof in one device call: build native/cuda, then bench/serve-gpu.ts (engine
# in-process against `ernie-edge bench serve` → `ernie-edge serve --device cuda`, bf16 and the default
# precision, 1/64/256/512 streams, streamed and not; with --profile-level 512 a last, unmeasured run
# with the gateway and sidecar CPU-profiled), then TTFT at concurrency 1 stage by stage
# (bench/ttft-stages.ts, as bench/ttft-gpu.sh). Results in $1: serve-gpu.json, serve-gpu.svg, ttft.json,
# prof/top.txt, bench serve's own JSON/SVG per run, logs. Flags after $1 go to bench/serve-gpu.ts; with
# `--device cpu` (and small sizes) the same harness runs here without a GPU, skipping the device setup
# and the stage run:
#   bash bench/serve-gpu.sh /tmp/sg --device cpu --levels 1,4 --prompts 3,8 --input-len 8-32 --output-len 4-12
# On the GPU machine it expects .gpu/ (setup.sh, nm.tar.xz, ernie_native.node) as bench/gpu.sh does.
# SERVE_GPU_TIMEOUT / TTFT_TIMEOUT (seconds) bound the two parts.
set -uo pipefail
out=${1:-/tmp/serve-gpu-out}
shift || true
mkdir -p "$out"
cpu=0
for a in "$@"; do [ "$a" = cpu ] && cpu=1; done
if [ "$cpu" = 0 ]; then
  # shellcheck source=bench/gpu-prepare.sh
  source bench/gpu-prepare.sh
fi
t0=$(date +%s)
timeout "${SERVE_GPU_TIMEOUT:-360}" node --import tsx bench/serve-gpu.ts "$out" "$@" > "$out/serve-gpu.log" 2>&1
rc=$?
echo "serve-gpu exit $rc after $(( $(date +%s) - t0 )) s"
# The servers' JSON log lines stay in the file; the summary is the rest.
grep -v '^{"level"' "$out/serve-gpu.log" | tail -30
if [ "$cpu" = 0 ]; then
  t1=$(date +%s)
  SERVE_ARGS='--device cuda --dtype bfloat16 --max-num-seqs 512' DIRECT=1 N=16 MAX_TOKENS=64 OUT="$out/ttft.json" \
    timeout "${TTFT_TIMEOUT:-120}" node --import tsx bench/ttft-stages.ts > "$out/ttft.log" 2>&1
  echo "ttft-stages exit $? after $(( $(date +%s) - t1 )) s"
  grep -v '^\s*{"level' "$out/ttft.log" | tail -6
fi
exit "$rc"
