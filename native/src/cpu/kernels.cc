#include "cpu/kernels.h"

#include <algorithm>
#include <cstring>

namespace ee::cpu {
namespace avx512 { extern const Kernels kKernels; }
namespace avx2 { extern const Kernels kKernels; }

void pack_matrix(const bf16_t* src, int n, int k, bf16_t* dst, int row_begin, int row_end) {
  const int kp = pad_k(k), full = n / kPackRows * kPackRows;
  for (int r = row_begin; r < row_end; ++r) {
    const bf16_t* s = src + size_t(r) * k;
    if (r < full) {
      bf16_t* g = dst + size_t(r / kPackRows) * kPackRows * kp + size_t(r % kPackRows) * kPackK;
      for (int kb = 0; kb < kp; kb += kPackK) {
        bf16_t* d = g + size_t(kb) * kPackRows;
        const int len = std::min(kPackK, k - kb);
        std::memcpy(d, s + kb, sizeof(bf16_t) * size_t(std::max(len, 0)));
        for (int j = std::max(len, 0); j < kPackK; ++j) d[j] = 0;
      }
    } else {
      bf16_t* d = dst + size_t(r) * kp;
      std::memcpy(d, s, sizeof(bf16_t) * size_t(k));
      for (int j = k; j < kp; ++j) d[j] = 0;
    }
  }
}

void unpack_row(const bf16_t* packed, int n, int k, int r, float* out) {
  const int kp = pad_k(k), full = n / kPackRows * kPackRows;
  if (r < full) {
    const bf16_t* g = packed + size_t(r / kPackRows) * kPackRows * kp + size_t(r % kPackRows) * kPackK;
    for (int kk = 0; kk < k; ++kk) out[kk] = bf16_to_f32(g[size_t(kk / kPackK) * kPackRows * kPackK + kk % kPackK]);
  } else {
    const bf16_t* d = packed + size_t(r) * kp;
    for (int kk = 0; kk < k; ++kk) out[kk] = bf16_to_f32(d[kk]);
  }
}

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
