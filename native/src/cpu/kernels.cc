#include "cpu/kernels.h"

namespace ee::cpu {
namespace avx512 { extern const Kernels kKernels; }
namespace avx2 { extern const Kernels kKernels; }

const Kernels* select_kernels(const std::string& force) {
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (force == "avx512") return has512 ? &avx512::kKernels : nullptr;
  if (force == "avx2") return has2 ? &avx2::kKernels : nullptr;
  if (has512) return &avx512::kKernels;
  if (has2) return &avx2::kKernels;
  return nullptr;
}

}  // namespace ee::cpu
