#!/usr/bin/env bash
# Kernel microbenchmark of the int8 GEMMs beside the bf16 GEMM (tools/qgemm_bench.cc), linked with
# the addon's kernel objects (build the addon first). With a git revision, that revision's
# AVX512-VNNI kernel is built in too (namespace avx512_base) and timed interleaved with today's.
# Usage: native/tools/qgemm-bench.sh [REPS] [BASELINE_REV] [SHAPE_FILTER] > result.json
set -euo pipefail
cd "$(dirname "$0")/.."
r=build/Release
reps=${1:-5}
flags=(-std=c++20 -O3 -Isrc)
# The AVX512-VNNI kernel's flags (binding.gyp's kernels_avx512), for a baseline revision's copy.
isa=(-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni -mfma -mf16c)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
extra=()
if [ -n "${2:-}" ]; then
  git show "$2:native/src/cpu/qgemm_avx512.cc" > "$out/qgemm_base.cc"
  # The same source under another namespace (the token avx512 only names the namespace there).
  g++ "${flags[@]}" "${isa[@]}" -Davx512=avx512_base -c "$out/qgemm_base.cc" -o "$out/qgemm_base.o"
  extra=(-DEE_QGEMM_BASELINE "$out/qgemm_base.o")
fi
# Kernel objects only: tools/qgemm_bench.cc never touches the engine (and needs no pthread pool).
g++ "${flags[@]}" tools/qgemm_bench.cc "${extra[@]}" "$r/obj.target/ernie_native/src/cpu/kernels.o" \
  "$r/obj.target/ernie_native/src/cpu/qgemm.o" "$r/kernels_avx512.a" "$r/kernels_amx.a" "$r/kernels_avxvnni.a" \
  "$r/kernels_avx2.a" -o "$out/qgemm-bench"
"$out/qgemm-bench" "$reps" "${2:-}" "${3:-}"
