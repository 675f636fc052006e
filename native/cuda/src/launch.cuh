// Kernel launches of the model runner (host side): every kernel goes through launch(), which can
// ask for programmatic dependent launch (PDL, compute capability 9.0+): ERNIE_CUDA_PDL=1. The
// kernels pair it with pdl_begin() (device.cuh); inside a CUDA graph capture the attribute becomes
// a programmatic edge, so graph replays get it too. Off by default, as measured on the H200 (bf16,
// graphs, random workload at 256 streams, one run each way): single stream 1,222 tok/s with PDL
// against 1,175 without, 12-row decode steps 0.968 against 0.977 ms, but mixed steps of ~785 rows
// 3.17 against 2.87 ms, and the whole run 73.6k against 76.3k tok/s (both ways with the experimental
// attention overlap of model.cu on, and with the GEMV prefetching its
// weights into L2 before its wait, since removed: without PDL it only duplicated requests).
#pragma once
#include <cuda_runtime.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace eec {

// Whether launches ask for PDL: decided once per process from the current device.
inline bool pdl_enabled() {
  static const bool on = [] {
    if (!std::getenv("ERNIE_CUDA_PDL") || std::string(std::getenv("ERNIE_CUDA_PDL")) != "1") return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    return major >= 9;
  }();
  return on;
}

// Launches on this thread skip the attribute while a NoPdl is alive: for kernels on a side stream
// that start after an event wait, whose only ordering must stay the plain, complete one.
inline bool& pdl_suspended() {
  static thread_local bool v = false;
  return v;
}
struct NoPdl {
  bool was = pdl_suspended();
  NoPdl() { pdl_suspended() = true; }
  ~NoPdl() { pdl_suspended() = was; }
};

// kernel<<<grid, block, smem, s>>>(args...), with the PDL attribute where enabled.
template <typename... Params, typename... Args>
inline void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() && !pdl_suspended() ? 1 : 0;  // none: exactly a <<<>>> launch
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) throw std::runtime_error(std::string("kernel launch: ") + cudaGetErrorString(e));
}

}  // namespace eec
