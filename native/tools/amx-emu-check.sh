#!/usr/bin/env bash
# Checks the AMX kernels' tile logic on a CPU without AMX: amx.cc built onto a software tile model
# (amx_emulate.h) and linked with the addon's other kernel objects (build the addon first).
# Usage: native/tools/amx-emu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
r=build/Release
flags=(-std=c++20 -O2 -Isrc -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni -mfma -mf16c)
out=$(mktemp -d)
# Once per documented tdpbf16ps order (amx_emulate.h), so that both AVX-512 tile models are checked.
for model in sequential sdm; do
  def=(-DEE_AMX_EMULATE)
  [ "$model" = sdm ] && def+=(-DEE_AMX_EMULATE_SDM)
  g++ "${flags[@]}" "${def[@]}" -c src/cpu/amx.cc -o "$out/amx.o"
  g++ "${flags[@]}" tools/amx_emu_check.cc "$out/amx.o" "$r/obj.target/ernie_native/src/cpu/kernels.o" \
    "$r/obj.target/ernie_native/src/cpu/qgemm.o" "$r/kernels_avx512.a" "$r/kernels_avxvnni.a" "$r/kernels_avx2.a" \
    -o "$out/amx-emu-check"
  echo "tile model: $model"
  "$out/amx-emu-check"
done
rm -rf "$out"
