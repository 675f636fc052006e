# Sourced by the device scripts (gpu.sh, serve-gpu.sh, ttft-gpu.sh, gpu-profile.sh): Node from .gpu/,
# the node_modules subset, the addon built on the CPU machine, then native/cuda built here.
# Expects $out (the results folder); logs the GPU to $out/nvidia-smi.txt and the build to $out/build.log.
# shellcheck shell=bash disable=SC1091
: "${out:?set out (the results folder) before sourcing}"
source .gpu/setup.sh
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv | tee "$out/nvidia-smi.txt"
tar -xJf .gpu/nm.tar.xz
mkdir -p native/build/Release && cp .gpu/ernie_native.node native/build/Release/
t0=$(date +%s)
bash native/cuda/build.sh > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"; tail -2 "$out/build.log"
