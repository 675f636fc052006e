#include "cpu/qgemm.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace ee::cpu {
namespace avx512 {
extern const Int8Kernels kInt8Kernels;
}
namespace avxvnni {
extern const Int8Kernels kInt8Kernels;
}
namespace avx2 {
extern const Int8Kernels kInt8Kernels;
}
namespace amx {
extern const Int8Kernels kInt8Kernels;
}

void quantize_rows(const bf16_t* src, int n, int k, int8_t* q, float* scale, int32_t* wsum, int row_begin,
                   int row_end) {
  const int kp = pad_k8(k);
  for (int r = row_begin; r < row_end; ++r) {
    const bf16_t* s = src + size_t(r) * k;
    float amax = 0;
    for (int c = 0; c < k; ++c) amax = std::max(amax, std::fabs(bf16_to_f32(s[c])));
    const float inv = act_scale_inv(amax);  // the same rule as the activations': 127 / max |w|
    scale[r] = amax / 127.0f;
    int32_t sum = 0;
    for (int c = 0; c < kp; ++c) {
      const int v = c < k ? std::clamp(int(std::lrintf(bf16_to_f32(s[c]) * inv)), -127, 127) : 0;
      q[packed_index8(n, k, r, c)] = int8_t(v);
      sum += v;
    }
    wsum[r] = sum;
  }
}

namespace {
constexpr long kArchReqXcompPerm = 0x1023;  // arch_prctl: ask for an XSAVE feature's state
constexpr long kXfeatureXtiledata = 18;     // the AMX tile data (8 x 1 KiB)
}  // namespace

namespace {
// AMX-INT8 from this many rows (a full tile row group) up, AVX512-VNNI below: one-row decode steps
// streamed tiles slower than vpdpbusd streams the same bytes (bench/results/cpu-int8-amx-intel.json).
// The two give the same bits (one integer sum, one epilogue: qgemm.h), so the switch on M keeps a
// request's results independent of its batch. The act format differs (u8 offset vs s8): prepare
// and gemm decide from the same a.M.
constexpr int kAmxMinRows = 16;
const Int8Kernels& pick(const Act& a) { return a.M < kAmxMinRows ? avx512::kInt8Kernels : amx::kInt8Kernels; }
void prepare_hybrid(const float* x, int ldx, const Act& a, int m0, int m1) { pick(a).prepare_act(x, ldx, a, m0, m1); }
void gemm_hybrid(const Act& a, const QMatrix& w, int N, int n0, int n1, float* y, int ldy) {
  pick(a).gemm(a, w, N, n0, n1, y, ldy);
}
double peak_hybrid(long iters) { return amx::kInt8Kernels.dot_peak(iters); }
const Int8Kernels kAmxHybrid = {"amx-int8/avx512vnni", prepare_hybrid, gemm_hybrid, peak_hybrid};
}  // namespace

bool amx_usable() {
  static const bool ok = [] {
    __builtin_cpu_init();
    unsigned a, b, c, d;
    // CPUID.(EAX=7, ECX=0):EDX bit 22 AMX-BF16, bit 24 AMX-TILE, bit 25 AMX-INT8.
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    const bool cpu = (d >> 22 & 1) && (d >> 24 & 1) && (d >> 25 & 1) && __builtin_cpu_supports("avx512bf16") &&
                     __builtin_cpu_supports("avx512vnni");
    // Linux hands out the 8 KiB tile state only on request (once per process, for all its threads).
    return cpu && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

const Int8Kernels* select_int8_kernels(const std::string& force) {
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool vnni = has2 && __builtin_cpu_supports("avxvnni");
  if (force == "amx") return amx_usable() ? &amx::kInt8Kernels : nullptr;
  if (force == "avx512") return has512 ? &avx512::kInt8Kernels : nullptr;
  if (force == "avxvnni") return vnni ? &avxvnni::kInt8Kernels : nullptr;
  if (force == "avx2") return has2 ? &avx2::kInt8Kernels : nullptr;
  if (!force.empty()) return nullptr;  // a name this build does not know
  if (amx_usable() && has512) return &kAmxHybrid;
  if (has512) return &avx512::kInt8Kernels;
  if (vnni) return &avxvnni::kInt8Kernels;
  if (has2) return &avx2::kInt8Kernels;
  return nullptr;
}

}  // namespace ee::cpu
