// Kernel launches of the model runner (host side): every kernel goes through launch(), which
// throws on a launch error (a bare <<<>>> launch would leave it for the next call to report).
// Programmatic dependent launch was tried through this function and removed (measured, not kept:
// native/cuda/README.md).
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace eec {

// kernel<<<grid, block, smem, s>>>(args...), throwing on a launch error.
template <typename... Params, typename... Args>
inline void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) throw std::runtime_error(std::string("kernel launch: ") + cudaGetErrorString(e));
}

}  // namespace eec
