#!/usr/bin/env bash
# Builds native/cuda/build/libernie_cuda.so where nvcc is found; prints why not and exits 0
# elsewhere (a CPU-only install is untouched). Usage: bash native/cuda/build.sh [extra cmake args]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v nvcc >/dev/null 2>&1; then
  echo "native/cuda: nvcc not found, the CUDA backend is not built (CPU only)"
  exit 0
fi
extra=()
# cuBLAS: the toolkit's, else the first one found beside it or in Python's site-packages.
if ! ls "$(dirname "$(readlink -f "$(command -v nvcc)")")"/../lib64/libcublas.so* >/dev/null 2>&1; then
  roots=(/usr/local /usr/lib /opt)
  site=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
  lib=$(find "${roots[@]}" $site -name 'libcublas.so*' -not -name '*Lt*' 2>/dev/null | sort | head -1 || true)
  inc=$(find "${roots[@]}" $site -name cublas_v2.h 2>/dev/null | head -1 || true)
  if [ -n "$lib" ] && [ -n "$inc" ]; then
    echo "native/cuda: cuBLAS from $lib"
    extra+=("-DEE_CUBLAS_LIB=$lib" "-DEE_CUBLAS_INC=$(dirname "$inc")")
  fi
fi
# The GPU architecture is passed every time so that a build folder configured earlier (CMake caches
# it) cannot keep an older one: CUDA_ARCHITECTURES="80;90" for several, default 90 (H100/H200).
cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-90}" "${extra[@]}" "$@"
cmake --build "$here/build" -j "$(nproc)"
echo "native/cuda: built $here/build/libernie_cuda.so"
