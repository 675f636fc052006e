#!/usr/bin/env bash
# Attention microbenchmark (tools/attn_bench.cc): fp32 against bf16 KV cache, prefill (cache-resident)
# and the 64-stream wave's decode steps (cache read from memory), one thread, thread CPU time. Links
# the built addon's kernel objects (build the addon first).
# Usage: native/tools/attn-bench.sh [REPS]   (prints one JSON object per case)
set -euo pipefail
cd "$(dirname "$0")/.."
r=build/Release
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -std=c++20 -O3 -mavx512f -Isrc tools/attn_bench.cc "$r/obj.target/ernie_native/src/cpu/kernels.o" \
  "$r/obj.target/ernie_native/src/cpu/qgemm.o" "$r/kernels_avx512.a" "$r/kernels_amx.a" "$r/kernels_avxvnni.a" \
  "$r/kernels_avx2.a" -o "$out/attn-bench"
"$out/attn-bench" "${1:-5}"
