#include "cpu/kernels.h"

#include <algorithm>
#include <cstring>

namespace ee::cpu {
namespace avx512 { extern const Kernels kKernels; }
namespace avx2 { extern const Kernels kKernels; }

void pack_matrix(const bf16_t* src, int n, int k, bf16_t* dst, int row_begin, int row_end) {
  const int kp = pad_k(k), full = n / kPackRows * kPackRows;
  auto at = [&](const bf16_t* s, int c) { return c < k ? s[c] : bf16_t(0); };
  for (int r = row_begin; r < row_end; ++r) {
    const bf16_t* s = src + size_t(r) * k;
    if (r < full) {  // pair p of row r at block + p * 64 + (r % 32) * 2 (packed_index, unrolled)
      bf16_t* d = dst + packed_index(n, k, r, 0);
      for (int p = 0; p < kp / 2; ++p) {
        d[size_t(p) * 2 * kPackRows] = at(s, 2 * p);
        d[size_t(p) * 2 * kPackRows + 1] = at(s, 2 * p + 1);
      }
    } else {
      bf16_t* d = dst + size_t(r) * kp;
      for (int c = 0; c < kp; ++c) d[c] = at(s, c);
    }
  }
}

void unpack_row(const bf16_t* packed, int n, int k, int r, float* out) {
  for (int c = 0; c < k; ++c) out[c] = bf16_to_f32(packed[packed_index(n, k, r, c)]);
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
