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

// MB rows of x times one packed group of 4 weight rows over the full (padded) K.
// hi/lo: activation planes, row stride Kp; wg: the group, Kp/32 blocks of 4 x 32 bf16.
template <int MB, bool PRECISE>
inline void kern4(const bf16_t* hi, const bf16_t* lo, int Kp, const bf16_t* wg, float* y, int ldy) {
  __m512 acc[MB][4];
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int k = 0; k < Kp; k += 32) {
    const bf16_t* wb = wg + size_t(k) * 4;
    __m512i b[4];
    for (int j = 0; j < 4; ++j) {
      b[j] = _mm512_loadu_si512(wb + 32 * j);
      // One sequential stream: fetch 2 KiB ahead (decode is bound by this stream).
      _mm_prefetch(reinterpret_cast<const char*>(wb + 1024 + 32 * j), _MM_HINT_T0);
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
  for (int i = 0; i < MB; ++i) _mm_storeu_ps(y + size_t(i) * ldy, hsum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
}

// One plain (unpacked, Kp-padded) weight row: the N % 4 tail.
template <bool PRECISE>
inline float kern1(const bf16_t* hi, const bf16_t* lo, const bf16_t* w, int Kp) {
  __m512 acc = _mm512_setzero_ps();
  for (int k = 0; k < Kp; k += 32) {
    __m512i b = _mm512_loadu_si512(w + k);
    acc = dp(acc, _mm512_loadu_si512(hi + k), b);
    if constexpr (PRECISE) acc = dp(acc, _mm512_loadu_si512(lo + k), b);
  }
  return _mm512_reduce_add_ps(acc);
}

template <int MB, bool PRECISE>
inline void rows_times_groups(const bf16_t* hi, const bf16_t* lo, int Kp, const bf16_t* w, int g0, int g1, float* y,
                              int ldy) {
  for (int g = g0; g < g1; ++g) kern4<MB, PRECISE>(hi, lo, Kp, w + size_t(g) * 4 * Kp, y + 4 * g, ldy);
}

template <bool PRECISE>
void gemm_impl(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy) {
  const int M = a.M, Kp = a.Kp;
  const bf16_t* hi = static_cast<const bf16_t*>(a.data);
  const bf16_t* lo = hi + size_t(M) * Kp;
  const int full = N / 4 * 4;
  const int g0 = n0 / 4, g1 = std::min(n1, full) / 4;
  // Loop order: MB activation rows (4 x hi + lo, or 6 x hi: 16 / 12 KiB at K = 1024) stay in L1
  // while this task's weight groups stream past them from L2; halves L2 traffic against the
  // opposite order.
  // NOTE: 6 rows (24 accumulators) without the lo plane: one weight load feeds 6 dot products
  // instead of 4; measured 298 -> 332 GFLOP/s on one core (K = 1024, 128 weight rows). The precise
  // kernel already does 8 per weight load and stays at 4 rows (6 would need 24 + 4 + 2 registers
  // and measured no faster).
  constexpr int MB = PRECISE ? 4 : 6;
  int m = 0;
  for (; m + MB <= M; m += MB)
    rows_times_groups<MB, PRECISE>(hi + size_t(m) * Kp, lo + size_t(m) * Kp, Kp, w, g0, g1, y + size_t(m) * ldy, ldy);
  const bf16_t* h = hi + size_t(m) * Kp;
  const bf16_t* l = lo + size_t(m) * Kp;
  float* yy = y + size_t(m) * ldy;
  switch (M - m) {
    case 5: rows_times_groups<5, PRECISE>(h, l, Kp, w, g0, g1, yy, ldy); break;
    case 4: rows_times_groups<4, PRECISE>(h, l, Kp, w, g0, g1, yy, ldy); break;
    case 3: rows_times_groups<3, PRECISE>(h, l, Kp, w, g0, g1, yy, ldy); break;
    case 2: rows_times_groups<2, PRECISE>(h, l, Kp, w, g0, g1, yy, ldy); break;
    case 1: rows_times_groups<1, PRECISE>(h, l, Kp, w, g0, g1, yy, ldy); break;
    default: break;
  }
  for (int n = std::max(n0, full); n < n1; ++n)
    for (int mm = 0; mm < M; ++mm)
      y[size_t(mm) * ldy + n] = kern1<PRECISE>(hi + size_t(mm) * Kp, lo + size_t(mm) * Kp, w + size_t(n) * Kp, Kp);
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

void gemm(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy) {
  if (a.precise) gemm_impl<true>(a, w, N, n0, n1, y, ldy);
  else gemm_impl<false>(a, w, N, n0, n1, y, ldy);
}

double dot_peak(long iters) {
  __m512 acc[24];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3c00);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 24
    for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  float sink = 0;
  for (auto& a : acc) sink += _mm512_reduce_add_ps(a);
  volatile float keep = sink;
  (void)keep;
  return double(iters) * 24 * 64;
}

}  // namespace

extern const Kernels kKernels = {
    "avx512bf16", act_bytes, prepare_act, gemm,      rmsnorm, silu_mul, add_inplace,
    bf16_to_f32,  max_val,   exp_sum,     attention, dot_peak,
};

}  // namespace ee::cpu::avx512
