// AVX2 + FMA kernels: the portable fallback for any x86-64 with AVX2. Weights are widened from
// bf16 to fp32 on the fly and multiplied in fp32.
#define EE_ISA_NS avx2
#include "cpu/simd.h"
#include "cpu/kernels.h"
#include "cpu/kernels.inc"

namespace ee::cpu::avx2 {

namespace {

inline __m256 widen(const bf16_t* p) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

inline float hsum(__m256 v) { return reduce_add(VF{v}); }

// MB rows of x times 2 rows of w over the full K (16 ymm registers: 8 accumulators at MB = 4).
template <int MB>
inline void kern2(const float* x, int ldx, const bf16_t* w, int K, float* y, int ldy) {
  __m256 acc[MB][2];
  for (int i = 0; i < MB; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const bf16_t* w1 = w + K;
  int k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 b0 = widen(w + k), b1 = widen(w1 + k);
    for (int i = 0; i < MB; ++i) {
      __m256 a = _mm256_loadu_ps(x + size_t(i) * ldx + k);
      acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < MB; ++i) {
    float s0 = hsum(acc[i][0]), s1 = hsum(acc[i][1]);
    for (int kk = k; kk < K; ++kk) {
      s0 += x[size_t(i) * ldx + kk] * ee::bf16_to_f32(w[kk]);
      s1 += x[size_t(i) * ldx + kk] * ee::bf16_to_f32(w1[kk]);
    }
    y[size_t(i) * ldy] = s0;
    y[size_t(i) * ldy + 1] = s1;
  }
}

inline float kern1(const float* x, const bf16_t* w, int K) {
  __m256 acc = _mm256_setzero_ps();
  int k = 0;
  for (; k + 8 <= K; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), widen(w + k), acc);
  float s = hsum(acc);
  for (; k < K; ++k) s += x[k] * ee::bf16_to_f32(w[k]);
  return s;
}

size_t act_bytes(int M, int K) { return size_t(M) * size_t(K) * sizeof(float); }

void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1) {
  float* dst = static_cast<float*>(a.data);
  for (int m = m0; m < m1; ++m) std::memcpy(dst + size_t(m) * a.K, x + size_t(m) * ldx, sizeof(float) * a.K);
}

void gemm(const Act& a, const bf16_t* w, int n0, int n1, float* y, int ldy) {
  const int M = a.M, K = a.K;
  const float* x = static_cast<const float*>(a.data);
  constexpr int MC = 32;
  for (int mc = 0; mc < M; mc += MC) {
    const int me = std::min(M, mc + MC);
    int n = n0;
    for (; n + 2 <= n1; n += 2) {
      const bf16_t* wn = w + size_t(n) * K;
      int m = mc;
      for (; m + 4 <= me; m += 4) kern2<4>(x + size_t(m) * K, K, wn, K, y + size_t(m) * ldy + n, ldy);
      for (; m < me; ++m) kern2<1>(x + size_t(m) * K, K, wn, K, y + size_t(m) * ldy + n, ldy);
    }
    for (; n < n1; ++n)
      for (int m = mc; m < me; ++m) y[size_t(m) * ldy + n] = kern1(x + size_t(m) * K, w + size_t(n) * K, K);
  }
}

}  // namespace

extern const Kernels kKernels = {
    "avx2", act_bytes, prepare_act, gemm, rmsnorm, silu_mul, add_inplace, bf16_to_f32, attention,
};

}  // namespace ee::cpu::avx2
