#!/usr/bin/env bash
# One device call: build native/cuda, run the CUDA tests, the engine benchmark and HF generate on
# the same prompts (TESTS_ONLY=1: build and tests only; SKIP_HF=1: no HF run). Expects .gpu/ from ../shared/gpu/pack.sh plus .gpu/nm.tar.xz (node_modules
# subset) and .gpu/ernie_native.node (the addon built on the CPU machine). Logs and JSON in $1.
set -uo pipefail
out=${1:-/tmp/gpu-out}
mkdir -p "$out"
# shellcheck source=bench/gpu-prepare.sh
source bench/gpu-prepare.sh
timeout 300 node node_modules/vitest/vitest.mjs run test/engine/cuda.test.ts test/engine/device.test.ts > "$out/tests.log" 2>&1
echo "tests exit $?"; grep -E "\[cuda\]|×|FAIL|Error|expected" "$out/tests.log" | head -70; tail -6 "$out/tests.log"
[ "${TESTS_ONLY:-0}" = 1 ] && exit 0
timeout 240 node --import tsx bench/gpu.ts "$out" > "$out/bench.log" 2>&1
echo "bench exit $?"; cat "$out/bench.log" | tail -25
if [ "${SKIP_HF:-0}" != 1 ] && [ -f "$out/hf_input.json" ]; then
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/hf_generate.py "$out/hf_input.json" "$out/hf.json" 256 > "$out/hf.log" 2>&1
  echo "hf exit $?"; grep -v Warning "$out/hf.log" | tail -8
fi
rm -f "$out/hf_input.json"
