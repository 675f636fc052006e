// int8 GEMM with AVX512-VNNI (vpdpbusd). Built with the AVX-512 flags plus -mavx512vnni; selected only
// when the CPU reports avx512_vnni. Shapes and the epilogue contract: qgemm.h.
//
// vpdpbusd multiplies unsigned by signed bytes, so activations are stored offset, u = xq + 128 (in
// [1, 255]), and each output subtracts 128 * wsum[n] (sum_k (xq + 128) w = sum_k xq w + 128 sum_k w).
// NOTE: vpdpbssd (signed x signed, AVX-VNNI-INT8) would need no offset, but it is 256-bit only and
// absent from Zen 5 and Sapphire Rapids; the offset costs one vpsubd per output vector.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/qgemm.h"

namespace ee::cpu::avx512 {

// Quantizes rows [m0, m1) of x to int8 per qgemm.h (one plane, two when a.precise); OFFSET stores
// q + 128 (u8) instead of q (s8). Padding columns hold the value 0 (128 when offset).
template <bool OFFSET>
void prepare_rows8(const float* x, int ldx, const Act& a, int m0, int m1) {
  uint8_t* base = static_cast<uint8_t*>(a.data);
  float* s1 = reinterpret_cast<float*>(base + act_scales_offset(a.M, a.Kp, a.precise));
  float* s2 = s1 + a.M;
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  const __m128i off = _mm_set1_epi8(OFFSET ? -128 : 0);
  const size_t plane = size_t(a.M) * a.Kp;
  auto put = [&](uint8_t* q, int v) { *q = uint8_t(int8_t(v)) ^ (OFFSET ? 0x80 : 0); };
  for (int m = m0; m < m1; ++m) {
    const float* row = x + size_t(m) * ldx;
    uint8_t* q1 = base + size_t(m) * a.Kp;
    uint8_t* q2 = q1 + plane;
    __m512 mx = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= a.K; k += 16) mx = _mm512_max_ps(mx, _mm512_and_ps(_mm512_loadu_ps(row + k), sign));
    float amax = _mm512_reduce_max_ps(mx);
    for (; k < a.K; ++k) amax = std::max(amax, std::fabs(row[k]));
    const float inv = act_scale_inv(amax), inv2 = inv * kResidualRatio;
    s1[m] = amax / 127.0f;
    s2[m] = s1[m] / kResidualRatio;
    const __m512 vinv = _mm512_set1_ps(inv), vinv2 = _mm512_set1_ps(inv2), vs1 = _mm512_set1_ps(s1[m]);
    for (k = 0; k + 16 <= a.K; k += 16) {
      // cvtps rounds to nearest even (the default MXCSR mode, as lrintf below).
      const __m512 v = _mm512_loadu_ps(row + k);
      const __m512i i = _mm512_max_epi32(lo, _mm512_min_epi32(hi, _mm512_cvtps_epi32(_mm512_mul_ps(v, vinv))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q1 + k), _mm_xor_si128(_mm512_cvtepi32_epi8(i), off));
      if (a.precise) {
        const __m512 r = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(i), vs1, v);  // x - q1 s1, fused
        const __m512i j = _mm512_max_epi32(lo, _mm512_min_epi32(hi, _mm512_cvtps_epi32(_mm512_mul_ps(r, vinv2))));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q2 + k), _mm_xor_si128(_mm512_cvtepi32_epi8(j), off));
      }
    }
    for (; k < a.K; ++k) {
      const int i = std::clamp(int(std::lrintf(row[k] * inv)), -127, 127);
      put(q1 + k, i);
      if (a.precise)
        put(q2 + k, std::clamp(int(std::lrintf(__builtin_fmaf(-float(i), s1[m], row[k]) * inv2)), -127, 127));
    }
    for (; k < a.Kp; ++k) {
      put(q1 + k, 0);
      if (a.precise) put(q2 + k, 0);
    }
  }
}

void prepare_act8_s8(const float* x, int ldx, const Act& a, int m0, int m1) { prepare_rows8<false>(x, ldx, a, m0, m1); }

namespace {

void prepare_act8_u8(const float* x, int ldx, const Act& a, int m0, int m1) { prepare_rows8<true>(x, ldx, a, m0, m1); }

// 16 outputs of qgemm.h's epilogue; d = acc - comp per plane.
template <int P>
inline void epilogue16(const __m512i* acc, __m512i comp, __m512 sw, float s1, float s2, float* y) {
  const __m512 f1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[0], comp));
  if constexpr (P == 1) {
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_mul_ps(f1, sw), _mm512_set1_ps(s1)));
  } else {
    const __m512 f2 = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[1], comp));
    const __m512 f = _mm512_fmadd_ps(f1, _mm512_set1_ps(s1), _mm512_mul_ps(f2, _mm512_set1_ps(s2)));
    _mm512_storeu_ps(y, _mm512_mul_ps(f, sw));
  }
}

// acc += the 16 quad dot products of u8 (unsigned bytes) and s8 (signed bytes): vpdpbusd.
// NOTE: by inline asm because GCC 12 compiles _mm512_dpbusd_epi32 on an array of accumulators into
// a register copy and a stack store of every accumulator at every call (its builtin does not tie
// the accumulator to the result), which left the kernel at a fraction of vpdpbusd's rate; "+v" ties
// them, and the loop keeps every accumulator in a register.
inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

// MB rows of u8 activations (P planes, plane stride ps) times NB Q32 blocks (32 NB weight rows,
// blocks at a stride of 32 Kp bytes) over the padded K: y[i][0..32 NB). Per quad: each block's two
// vectors are loaded once and each row's quad (4 bytes) per plane is broadcast, 2 NB vpdpbusd per
// row and plane. Registers: 2 NB P MB accumulators + 2 NB weight vectors + a broadcast. The integer
// sums are exact, so the tile shape never changes an output's bits.
template <int MB, int NB, int P>
inline void kern(const uint8_t* x, size_t ps, int Kp, const int8_t* wb, const float* s1, const float* s2,
                 const float* sw, const int32_t* wsum, float* y, int ldy) {
  constexpr int NV = 2 * NB;
  const size_t bs = size_t(kPackRows) * Kp;  // bytes per block
  __m512i acc[MB][NV][P];
  for (int i = 0; i < MB; ++i)
    for (int v = 0; v < NV; ++v)
      for (int p = 0; p < P; ++p) acc[i][v][p] = _mm512_setzero_si512();
  for (int q = 0; q < Kp / 4; ++q) {
    __m512i b[NV];
    for (int j = 0; j < NB; ++j) {
      const int8_t* w = wb + size_t(j) * bs + size_t(q) * 4 * kPackRows;
      b[2 * j] = _mm512_loadu_si512(w);
      b[2 * j + 1] = _mm512_loadu_si512(w + 64);
      // One sequential stream per block: fetch 2 KiB (16 quads) ahead.
      _mm_prefetch(reinterpret_cast<const char*>(w + 2048), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(w + 2048 + 64), _MM_HINT_T0);
    }
    for (int i = 0; i < MB; ++i)
      for (int p = 0; p < P; ++p) {
        int32_t xq;
        std::memcpy(&xq, x + p * ps + size_t(i) * Kp + 4 * size_t(q), 4);
        const __m512i a = _mm512_set1_epi32(xq);
        for (int v = 0; v < NV; ++v) acc[i][v][p] = dpbusd(acc[i][v][p], a, b[v]);
      }
  }
  for (int v = 0; v < NV; ++v) {
    const __m512i c = _mm512_slli_epi32(_mm512_loadu_si512(wsum + 16 * v), 7);
    const __m512 s = _mm512_loadu_ps(sw + 16 * v);
    for (int i = 0; i < MB; ++i) epilogue16<P>(acc[i][v], c, s, s1[i], s2[i], y + size_t(i) * ldy + 16 * v);
  }
}

// The exact integer sum of one u8 activation row and one plain weight row (the N % 32 tail).
inline int32_t dot1(const uint8_t* x, const int8_t* w, int Kp, int32_t wsum) {
  __m512i acc = _mm512_setzero_si512();
  for (int k = 0; k < Kp; k += 64) acc = dpbusd(acc, _mm512_loadu_si512(x + k), _mm512_loadu_si512(w + k));
  return _mm512_reduce_add_epi32(acc) - wsum * 128;
}

template <int MB, int NB, int P>
inline void rows_times_blocks(const uint8_t* x, size_t ps, int Kp, const QMatrix& w, int b0, int b1, const float* s1,
                              const float* s2, float* y, int ldy) {
  int b = b0;
  for (; b + NB <= b1; b += NB)
    kern<MB, NB, P>(x, ps, Kp, w.q + size_t(b) * kPackRows * Kp, s1, s2, w.scale + b * kPackRows,
                    w.wsum + b * kPackRows, y + size_t(b) * kPackRows, ldy);
  for (; b < b1; ++b)
    kern<MB, 1, P>(x, ps, Kp, w.q + size_t(b) * kPackRows * Kp, s1, s2, w.scale + b * kPackRows, w.wsum + b * kPackRows,
                   y + size_t(b) * kPackRows, ldy);
}

// Blocks per pass for R rows and P planes: the most (4, 2 or 1; a task is 4 blocks) whose
// accumulators and weight vectors fit 28 of the 32 registers. Few rows (decode) take several
// blocks, so that more independent accumulators hide vpdpbusd's latency.
constexpr int blocks_for(int R, int P) {
  int nb = 4;
  while (nb > 1 && R * 2 * nb * P + 2 * nb > 28) nb /= 2;
  return nb;
}

template <int P>
void gemm_planes(const Act& a, const QMatrix& w, int N, int n0, int n1, float* y, int ldy) {
  const int M = a.M, Kp = a.Kp;
  const size_t ps = size_t(M) * Kp;
  const uint8_t* x = static_cast<const uint8_t*>(a.data);
  const float* s1 = act_scales(a);
  const float* s2 = s1 + M;
  const int full = N / kPackRows * kPackRows;
  const int b0 = n0 / kPackRows, b1 = std::min(n1, full) / kPackRows;
  // 24 accumulators: 12 rows x 32 outputs with one plane, 6 rows with two (as the bf16 kernel's
  // 12 rows, kernels_avx512.cc); half the rows over two blocks measured the same
  // (tools/qgemm-bench.sh).
  constexpr int MB = P == 1 ? 12 : 6;
  int m = 0;
  for (; m + MB <= M; m += MB)
    rows_times_blocks<MB, blocks_for(MB, P), P>(x + size_t(m) * Kp, ps, Kp, w, b0, b1, s1 + m, s2 + m,
                                                y + size_t(m) * ldy, ldy);
  const uint8_t* xm = x + size_t(m) * Kp;
  float* ym = y + size_t(m) * ldy;
  // clang-format off
  switch (M - m) {
#define EE_TAIL(R) \
  case R: if constexpr (R < MB) rows_times_blocks<R, blocks_for(R, P), P>(xm, ps, Kp, w, b0, b1, s1 + m, s2 + m, ym, ldy); break;
    EE_TAIL(11) EE_TAIL(10) EE_TAIL(9) EE_TAIL(8) EE_TAIL(7) EE_TAIL(6)
    EE_TAIL(5) EE_TAIL(4) EE_TAIL(3) EE_TAIL(2) EE_TAIL(1)
#undef EE_TAIL
    default: break;
  }
  // clang-format on
  for (int n = std::max(n0, full); n < n1; ++n)
    for (int mm = 0; mm < M; ++mm) {
      const uint8_t* xr = x + size_t(mm) * Kp;
      const int8_t* wr = w.q + size_t(n) * Kp;
      const int32_t d1 = dot1(xr, wr, Kp, w.wsum[n]);
      y[size_t(mm) * ldy + n] = P == 1 ? epilogue1(d1, s1[mm], w.scale[n])
                                       : epilogue2(d1, dot1(xr + ps, wr, Kp, w.wsum[n]), s1[mm], s2[mm], w.scale[n]);
    }
}

void gemm8(const Act& a, const QMatrix& w, int N, int n0, int n1, float* y, int ldy) {
  if (a.precise) gemm_planes<2>(a, w, N, n0, n1, y, ldy);
  else gemm_planes<1>(a, w, N, n0, n1, y, ldy);
}

double dot_peak8(long iters) {
  __m512i acc[24];
  for (auto& a : acc) a = _mm512_setzero_si512();
  const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(2);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 24
    for (auto& a : acc) a = dpbusd(a, x, y);
  int sink = 0;
  for (auto& a : acc) sink += _mm512_reduce_add_epi32(a);
  volatile int keep = sink;
  (void)keep;
  return double(iters) * 24 * 128;
}

}  // namespace

extern const Int8Kernels kInt8Kernels = {"avx512vnni", prepare_act8_u8, gemm8, dot_peak8};

}  // namespace ee::cpu::avx512
