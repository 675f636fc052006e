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

// MB (<= 2) rows of x times one V32 block (32 weight rows) over the padded K: y[i][0..32).
// Per k-pair each 8-lane slice of the block's pairs is split into its k and k + 1 weights (a lane's
// low half shifted up is w[k] as an fp32, exactly; the lane with its low half cleared is w[k + 1]),
// and each row's x[k], x[k + 1] are broadcast: 2 FMAs per row and slice. 16 ymm
// registers: 8 accumulators, 4 broadcasts, the slice and its two halves.
template <int MB>
inline void kern32(const float* x, int Kp, const bf16_t* wb, float* y, int ldy) {
  __m256 acc[MB][4];
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm256_setzero_ps();
  const __m256i hi_mask = _mm256_set1_epi32(int(0xFFFF0000u));
  for (int p = 0; p < Kp / 2; ++p) {
    const bf16_t* w = wb + size_t(p) * 2 * kPackRows;
    _mm_prefetch(reinterpret_cast<const char*>(w + 1024), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(w + 1024 + 32), _MM_HINT_T0);
    __m256 xe[MB], xo[MB];
    for (int i = 0; i < MB; ++i) {
      xe[i] = _mm256_broadcast_ss(x + size_t(i) * Kp + 2 * p);
      xo[i] = _mm256_broadcast_ss(x + size_t(i) * Kp + 2 * p + 1);
    }
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 * j));
      const __m256 we = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      const __m256 wo = _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask));
      for (int i = 0; i < MB; ++i) {
        acc[i][j] = _mm256_fmadd_ps(xe[i], we, acc[i][j]);
        acc[i][j] = _mm256_fmadd_ps(xo[i], wo, acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + size_t(i) * ldy + 8 * j, acc[i][j]);
}

inline float kern1(const float* x, const bf16_t* w, int Kp) {
  __m256 acc = _mm256_setzero_ps();
  for (int k = 0; k < Kp; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), widen(w + k), acc);
  return hsum(acc);
}

size_t act_bytes(int M, int K) { return size_t(M) * size_t(pad_k(K)) * sizeof(float); }

// A plain fp32 copy of x, rows zero-padded to Kp like the packed weights.
void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1) {
  float* dst = static_cast<float*>(a.data);
  for (int m = m0; m < m1; ++m) {
    std::memcpy(dst + size_t(m) * a.Kp, x + size_t(m) * ldx, sizeof(float) * a.K);
    for (int k = a.K; k < a.Kp; ++k) dst[size_t(m) * a.Kp + k] = 0;
  }
}

void gemm(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy) {
  const int M = a.M, Kp = a.Kp;
  const float* x = static_cast<const float*>(a.data);
  const int full = N / kPackRows * kPackRows;
  const int b0 = n0 / kPackRows, b1 = std::min(n1, full) / kPackRows;
  int m = 0;
  for (; m + 2 <= M; m += 2)
    for (int b = b0; b < b1; ++b)
      kern32<2>(x + size_t(m) * Kp, Kp, w + size_t(b) * kPackRows * Kp, y + size_t(m) * ldy + kPackRows * b, ldy);
  if (m < M)
    for (int b = b0; b < b1; ++b)
      kern32<1>(x + size_t(m) * Kp, Kp, w + size_t(b) * kPackRows * Kp, y + size_t(m) * ldy + kPackRows * b, ldy);
  for (int n = std::max(n0, full); n < n1; ++n)
    for (int mm = 0; mm < M; ++mm) y[size_t(mm) * ldy + n] = kern1(x + size_t(mm) * Kp, w + size_t(n) * Kp, Kp);
}

double dot_peak(long iters) {
  __m256 acc[24];
  for (auto& a : acc) a = _mm256_setzero_ps();
  const __m256 x = _mm256_set1_ps(1.0f), y = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 24
    for (auto& a : acc) a = _mm256_fmadd_ps(x, y, a);
  __m256 t = acc[0];
  for (int i = 1; i < 24; ++i) t = _mm256_add_ps(t, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, t);
  volatile float keep = out[0];
  (void)keep;
  return double(iters) * 24 * 16;
}

}  // namespace

extern const Kernels kKernels = {
    "avx2",      act_bytes,   prepare_act, gemm,    rmsnorm,   silu_mul,
    add_inplace, bf16_to_f32, max_val,     exp_sum, attention, dot_peak,
};

}  // namespace ee::cpu::avx2
