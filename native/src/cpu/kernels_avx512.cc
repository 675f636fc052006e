// AVX-512 + AVX512-BF16 kernels. Built with -mavx512f -mavx512bw -mavx512vl -mavx512dq
// -mavx512bf16 -mfma; selected only when the CPU reports avx512bf16.
#define EE_ISA_NS avx512
#include "cpu/simd.h"
#include "cpu/kernels.h"
#include "cpu/kernels.inc"

namespace ee::cpu::avx512 {

namespace {

inline int pad32(int k) { return (k + 31) & ~31; }

inline __m512 dp(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

// [sum(a), sum(b), sum(c), sum(d)]; one fixed shuffle tree, used for every output.
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  // lanes: [a 0-3 | b 0-3 | c 0-3 | d 0-3] after folding the 256-bit halves
  __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  s = _mm512_add_ps(s, _mm512_permute_ps(s, 0x4E));
  s = _mm512_add_ps(s, _mm512_permute_ps(s, 0xB1));
  __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(idx, s));
}

// MB rows of x times 4 rows of w over the full K. hi/lo: the activation planes, row stride Kp.
template <int MB, bool PRECISE>
inline void kern4(const bf16_t* hi, const bf16_t* lo, int Kp, const bf16_t* w, int K, float* y, int ldy) {
  __m512 acc[MB][4];
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_ps();
  const bf16_t* wr[4] = {w, w + K, w + 2 * size_t(K), w + 3 * size_t(K)};
  int k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512i b[4];
    for (int j = 0; j < 4; ++j) {
      b[j] = _mm512_loadu_si512(wr[j] + k);
      // The next 4 rows follow contiguously: stream them in while these are consumed.
      _mm_prefetch(reinterpret_cast<const char*>(wr[j] + 4 * size_t(K) + k), _MM_HINT_T0);
    }
    for (int i = 0; i < MB; ++i) {
      __m512i a = _mm512_loadu_si512(hi + size_t(i) * Kp + k);
      for (int j = 0; j < 4; ++j) acc[i][j] = dp(acc[i][j], a, b[j]);
      if constexpr (PRECISE) {
        __m512i l = _mm512_loadu_si512(lo + size_t(i) * Kp + k);
        for (int j = 0; j < 4; ++j) acc[i][j] = dp(acc[i][j], l, b[j]);
      }
    }
  }
  if (k < K) {  // K tail: activations are zero-padded to Kp, weights are masked
    __mmask32 m = (__mmask32)((1ull << (K - k)) - 1);
    __m512i b[4];
    for (int j = 0; j < 4; ++j) b[j] = _mm512_maskz_loadu_epi16(m, wr[j] + k);
    for (int i = 0; i < MB; ++i) {
      __m512i a = _mm512_loadu_si512(hi + size_t(i) * Kp + k);
      for (int j = 0; j < 4; ++j) acc[i][j] = dp(acc[i][j], a, b[j]);
      if constexpr (PRECISE) {
        __m512i l = _mm512_loadu_si512(lo + size_t(i) * Kp + k);
        for (int j = 0; j < 4; ++j) acc[i][j] = dp(acc[i][j], l, b[j]);
      }
    }
  }
  for (int i = 0; i < MB; ++i) _mm_storeu_ps(y + size_t(i) * ldy, hsum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
}

// One row of w (the N % 4 tail), any number of x rows.
template <bool PRECISE>
inline float kern1(const bf16_t* hi, const bf16_t* lo, const bf16_t* w, int K) {
  __m512 acc = _mm512_setzero_ps();
  for (int k = 0; k < K; k += 32) {
    __mmask32 m = K - k >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1ull << (K - k)) - 1);
    __m512i b = _mm512_maskz_loadu_epi16(m, w + k);
    acc = dp(acc, _mm512_loadu_si512(hi + k), b);
    if constexpr (PRECISE) acc = dp(acc, _mm512_loadu_si512(lo + k), b);
  }
  return _mm512_reduce_add_ps(acc);
}

template <bool PRECISE>
void gemm_impl(const Act& a, const bf16_t* w, int n0, int n1, float* y, int ldy) {
  const int M = a.M, K = a.K, Kp = a.Kp;
  const bf16_t* hi = static_cast<const bf16_t*>(a.data);
  const bf16_t* lo = hi + size_t(M) * Kp;
  // Rows of x in one L2-resident chunk: 64 rows x Kp x 2 planes x 2 bytes = 256 KiB at K = 1024.
  constexpr int MC = 64;
  for (int mc = 0; mc < M; mc += MC) {
    const int me = std::min(M, mc + MC);
    int n = n0;
    for (; n + 4 <= n1; n += 4) {
      const bf16_t* wn = w + size_t(n) * K;
      int m = mc;
      for (; m + 4 <= me; m += 4)
        kern4<4, PRECISE>(hi + size_t(m) * Kp, lo + size_t(m) * Kp, Kp, wn, K, y + size_t(m) * ldy + n, ldy);
      const bf16_t* h = hi + size_t(m) * Kp;
      const bf16_t* l = lo + size_t(m) * Kp;
      float* yy = y + size_t(m) * ldy + n;
      switch (me - m) {
        case 3: kern4<3, PRECISE>(h, l, Kp, wn, K, yy, ldy); break;
        case 2: kern4<2, PRECISE>(h, l, Kp, wn, K, yy, ldy); break;
        case 1: kern4<1, PRECISE>(h, l, Kp, wn, K, yy, ldy); break;
        default: break;
      }
    }
    for (; n < n1; ++n)
      for (int m = mc; m < me; ++m)
        y[size_t(m) * ldy + n] = kern1<PRECISE>(hi + size_t(m) * Kp, lo + size_t(m) * Kp, w + size_t(n) * K, K);
  }
}

size_t act_bytes(int M, int K) { return size_t(M) * size_t(pad32(K)) * 2 * sizeof(bf16_t); }

void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1) {
  bf16_t* hi = static_cast<bf16_t*>(a.data);
  bf16_t* lo = hi + size_t(a.M) * a.Kp;
  for (int m = m0; m < m1; ++m) {
    const float* row = x + size_t(m) * ldx;
    bf16_t* h = hi + size_t(m) * a.Kp;
    bf16_t* l = lo + size_t(m) * a.Kp;
    int k = 0;
    for (; k + 16 <= a.K; k += 16) {
      __m512 v = _mm512_loadu_ps(row + k);
      __m256bh hb = _mm512_cvtneps_pbh(v);
      __m256i hbi = reinterpret_cast<__m256i&>(hb);
      __m512 hv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hbi), 16));
      __m256bh lb = _mm512_cvtneps_pbh(_mm512_sub_ps(v, hv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + k), hbi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(l + k), reinterpret_cast<__m256i&>(lb));
    }
    for (; k < a.K; ++k) {
      bf16_t hh = f32_to_bf16(row[k]);
      h[k] = hh;
      l[k] = f32_to_bf16(row[k] - ee::bf16_to_f32(hh));
    }
    for (; k < a.Kp; ++k) h[k] = l[k] = 0;
  }
}

void gemm(const Act& a, const bf16_t* w, int n0, int n1, float* y, int ldy) {
  if (a.precise) gemm_impl<true>(a, w, n0, n1, y, ldy);
  else gemm_impl<false>(a, w, n0, n1, y, ldy);
}

}  // namespace

extern const Kernels kKernels = {
    "avx512bf16", act_bytes, prepare_act, gemm, rmsnorm, silu_mul, add_inplace, bf16_to_f32, attention,
};

}  // namespace ee::cpu::avx512
