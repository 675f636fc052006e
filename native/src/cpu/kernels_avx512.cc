// AVX-512 + AVX512-BF16 kernels. Built with -mavx512f -mavx512bw -mavx512vl -mavx512dq
// -mavx512bf16 -mfma; selected only when the CPU reports avx512bf16.
#define EE_ISA_NS avx512
#define EE_ATTN_BF16_DOT 1  // this ISA defines attention_bf16_dot (below)
#include "cpu/simd.h"
#include "cpu/kernels.h"
#include "cpu/kernels.inc"

namespace ee::cpu::avx512 {

namespace {

inline int pad32(int k) { return (k + 31) & ~31; }

inline __m512 dp(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

// MB rows of x times one V32 block (32 weight rows) over the full padded K: y[i][0..32).
// hi/lo: activation planes, row stride Kp bf16 (read as Kp / 2 bf16 pairs); wb: the block, Kp / 2
// pairs of 2 x 16 lanes. Per pair: the block's two vectors are loaded once and each row's pair is
// broadcast to all lanes (embedded broadcast), 2 vdpbf16ps per row and plane.
// Registers: 2 x MB accumulators + 2 weight vectors (+ the broadcasts, folded into the dps).
template <int MB, bool PRECISE>
inline void kern32(const bf16_t* hi, const bf16_t* lo, int Kp, const bf16_t* wb, float* y, int ldy) {
  __m512 acc[MB][2];
  for (int i = 0; i < MB; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const uint32_t* h32 = reinterpret_cast<const uint32_t*>(hi);
  const uint32_t* l32 = reinterpret_cast<const uint32_t*>(lo);
  const size_t ld = size_t(Kp) / 2;
  for (int p = 0; p < Kp / 2; ++p) {
    const bf16_t* w = wb + size_t(p) * 2 * kPackRows;
    const __m512i b0 = _mm512_loadu_si512(w), b1 = _mm512_loadu_si512(w + 32);
    // One sequential stream: fetch 2 KiB (16 pairs) ahead.
    _mm_prefetch(reinterpret_cast<const char*>(w + 1024), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(w + 1024 + 32), _MM_HINT_T0);
    for (int i = 0; i < MB; ++i) {
      const __m512i a = _mm512_set1_epi32(int(h32[size_t(i) * ld + size_t(p)]));
      acc[i][0] = dp(acc[i][0], a, b0);
      acc[i][1] = dp(acc[i][1], a, b1);
      if constexpr (PRECISE) {
        const __m512i l = _mm512_set1_epi32(int(l32[size_t(i) * ld + size_t(p)]));
        acc[i][0] = dp(acc[i][0], l, b0);
        acc[i][1] = dp(acc[i][1], l, b1);
      }
    }
  }
  for (int i = 0; i < MB; ++i) {
    _mm512_storeu_ps(y + size_t(i) * ldy, acc[i][0]);
    _mm512_storeu_ps(y + size_t(i) * ldy + 16, acc[i][1]);
  }
}

// One plain (Kp-padded) weight row: the N % 32 tail.
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
inline void rows_times_blocks(const bf16_t* hi, const bf16_t* lo, int Kp, const bf16_t* w, int b0, int b1, float* y,
                              int ldy) {
  for (int b = b0; b < b1; ++b)
    kern32<MB, PRECISE>(hi, lo, Kp, w + size_t(b) * kPackRows * Kp, y + size_t(b) * kPackRows, ldy);
}

template <bool PRECISE>
void gemm_impl(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy) {
  const int M = a.M, Kp = a.Kp;
  const bf16_t* hi = static_cast<const bf16_t*>(a.data);
  const bf16_t* lo = hi + size_t(M) * Kp;
  const int full = N / kPackRows * kPackRows;
  const int b0 = n0 / kPackRows, b1 = std::min(n1, full) / kPackRows;
  // Loop order: MB activation rows stay in L1 while this task's weight blocks stream past them
  // from L2 (a task's 128 rows: 256 KiB at K = 1024).
  // NOTE: 12 rows x 32 outputs (24 accumulators) with bf16 activations: one weight vector feeds 12
  // dot products, one broadcast 2. The precise kernel takes 8 rows (both planes: 32 KiB of
  // activations at K = 1024 stay in L1 beside the weight stream), the fastest of 4, 6, 8, 10 and 12
  // for a 512-token prefill. This kernel beat the P4x32 dot-product kernel it replaced (6 rows x 4
  // weight rows, a horizontal sum per output) at every step shape measured. Figures:
  // native/README.md.
  constexpr int MB = PRECISE ? 8 : 12;
  int m = 0;
  for (; m + MB <= M; m += MB)
    rows_times_blocks<MB, PRECISE>(hi + size_t(m) * Kp, lo + size_t(m) * Kp, Kp, w, b0, b1, y + size_t(m) * ldy, ldy);
  const bf16_t* h = hi + size_t(m) * Kp;
  const bf16_t* l = lo + size_t(m) * Kp;
  float* yy = y + size_t(m) * ldy;
  // (Left as written: clang-format cannot lay out a run of case-generating macros.)
  // clang-format off
  switch (M - m) {
#define EE_TAIL(R) \
  case R: rows_times_blocks<R, PRECISE>(h, l, Kp, w, b0, b1, yy, ldy); break;
    EE_TAIL(11) EE_TAIL(10) EE_TAIL(9) EE_TAIL(8) EE_TAIL(7) EE_TAIL(6)
    EE_TAIL(5) EE_TAIL(4) EE_TAIL(3) EE_TAIL(2) EE_TAIL(1)
#undef EE_TAIL
    default: break;
  }
  // clang-format on
  for (int n = std::max(n0, full); n < n1; ++n)
    for (int mm = 0; mm < M; ++mm)
      y[size_t(mm) * ldy + n] = kern1<PRECISE>(hi + size_t(mm) * Kp, lo + size_t(mm) * Kp, w + size_t(n) * Kp, Kp);
}

size_t act_bytes(int M, int K) { return size_t(M) * size_t(pad32(K)) * 2 * sizeof(bf16_t); }

// The lo plane only when precise: the bf16 kernels never read it (half the stores, no subtraction).
template <bool PRECISE>
void prepare_rows(const float* x, int ldx, const Act& a, int m0, int m1) {
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
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + k), hbi);
      if constexpr (PRECISE) {
        __m512 hv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hbi), 16));
        __m256bh lb = _mm512_cvtneps_pbh(_mm512_sub_ps(v, hv));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(l + k), reinterpret_cast<__m256i&>(lb));
      }
    }
    for (; k < a.K; ++k) {
      bf16_t hh = f32_to_bf16(row[k]);
      h[k] = hh;
      if constexpr (PRECISE) l[k] = f32_to_bf16(row[k] - ee::bf16_to_f32(hh));
    }
    for (; k < a.Kp; ++k) {
      h[k] = 0;
      if constexpr (PRECISE) l[k] = 0;
    }
  }
}

void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1) {
  if (a.precise) prepare_rows<true>(x, ldx, a, m0, m1);
  else prepare_rows<false>(x, ldx, a, m0, m1);
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
    "avx512bf16", act_bytes,   prepare_act, gemm,    rmsnorm,   silu_mul,
    add_inplace,  bf16_to_f32, max_val,     exp_sum, attention, dot_peak,
};

// ---- attention with bf16 dot products (AttnLayer::bf16_dot) ------------------------------------
// With a bf16 cache and bf16 activations, q and the softmax weights are rounded to bf16 as well and
// each vdpbf16ps does a pair of products per lane: QK pairs two dims of one key, PV two keys of one
// dim. Against widening every cache element to fp32 and one FMA per product (the generic path in
// kernels.inc), about half the instructions per product. Why by hand: the pairs have to be built
// from the cache's own layouts (K transposed per block, V row per key), which no library takes.
// The softmax itself stays fp32. Precision: that of bf16 engines (q, P and the cache in bf16,
// fp32 accumulation), as llama.cpp's 16-bit caches.
namespace {

alignas(64) constexpr uint16_t kPairIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                               8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

// Lane i: (a[i], b[i]) as one bf16 pair (a low), from 16 bf16 each.
inline __m512i pair16(const uint16_t* a, const uint16_t* b, __m512i idx) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  return _mm512_permutexvar_epi16(idx, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
}
// n fp32 -> bf16 (round to nearest even), dst may alias src (it never runs ahead of the reads).
inline void to_bf16(const float* src, uint16_t* dst, int n) {
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 x = _mm512_loadu_ps(src + j);
    __m256bh h = _mm512_cvtneps_pbh(x);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), reinterpret_cast<__m256i&>(h));
  }
  for (; j < n; ++j) dst[j] = f32_to_bf16(src[j]);
}

// Scores of RG heads (q as bf16 pairs, [RG][D/2] at stride D/2) over C vectors of 16 keys each
// (kt[c]: the 16 keys' column in a K^T block tile, row stride bs). PF: kn[c] (the next vectors' K^T
// columns, or nullptr) into L1 and vn[c] (these vectors' V rows, 16 D contiguous bf16) into L2 as
// the loop goes, a line of each per d pair (D / 2 lines of V each): a decode step reads the cache
// from memory in scattered 4 KiB tiles, which the hardware prefetchers follow poorly.
template <int RG, int C, bool PF>
inline void qk_tile_dot(const uint32_t* qp, int D, const uint16_t* const* kt, int bs, float scale, float* const* out,
                        int ld, __m512i idx, const uint16_t* const* kn, const uint16_t* const* vn) {
  __m512 acc[RG][C];
  for (int r = 0; r < RG; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int d = 0; d < D; d += 2) {
    if constexpr (PF)
      for (int c = 0; c < C; ++c) {
        if (kn[c]) {
          _mm_prefetch(reinterpret_cast<const char*>(kn[c] + size_t(d) * bs), _MM_HINT_T0);
          if (bs > 16) _mm_prefetch(reinterpret_cast<const char*>(kn[c] + size_t(d + 1) * bs), _MM_HINT_T0);
        }
        _mm_prefetch(reinterpret_cast<const char*>(vn[c] + size_t(d) * 16), _MM_HINT_T1);
      }
    __m512i k[C];
    for (int c = 0; c < C; ++c) k[c] = pair16(kt[c] + size_t(d) * bs, kt[c] + size_t(d + 1) * bs, idx);
    for (int r = 0; r < RG; ++r) {
      const __m512i qv = _mm512_set1_epi32(int(qp[size_t(r) * (D / 2) + d / 2]));
      for (int c = 0; c < C; ++c) acc[r][c] = dp(acc[r][c], qv, k[c]);
    }
  }
  const __m512 vs = _mm512_set1_ps(scale);
  for (int r = 0; r < RG; ++r)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out[c] + size_t(r) * ld, _mm512_mul_ps(acc[r][c], vs));
}

// pf: prefetch as the keys are scored (qk_tile_dot), for a task's first query token (it walks K and
// V in from memory; the later ones find them in cache).
template <int RG>
void qk_all_dot(const AttnLayer& L, const AttnSeq& s, int kvh, int n_keys, const uint32_t* qp, float* sc, int ld,
                __m512i idx, bool pf) {
  const int D = L.head_dim, bs = L.block_size;
  const size_t block_stride = size_t(L.num_kv_heads) * bs * D;
  auto tile = [&](int j) {
    return static_cast<const uint16_t*>(L.k_cache) + size_t(s.block_table[j / bs]) * block_stride +
           size_t(kvh) * bs * D + j % bs;
  };
  auto vrows = [&](int j) {
    return static_cast<const uint16_t*>(L.v_cache) + size_t(s.block_table[j / bs]) * block_stride +
           size_t(kvh) * bs * D + size_t(j % bs) * D;
  };
  // Whole vectors of 16 keys (bs is a multiple of 16): the last may run into the block's unused
  // slots, whose scores land in the row's padding and are never read.
  constexpr int C = 3;
  const int nv = (n_keys + 15) / 16;
  const uint16_t *kt[C], *kn[C], *vn[C];
  float* out[C];
  int v = 0;
  for (; v + C <= nv; v += C) {
    for (int c = 0; c < C; ++c) kt[c] = tile((v + c) * 16), out[c] = sc + (v + c) * 16;
    if (pf) {
      for (int c = 0; c < C; ++c)
        kn[c] = v + C + c < nv ? tile((v + C + c) * 16) : nullptr, vn[c] = vrows((v + c) * 16);
      qk_tile_dot<RG, C, true>(qp, D, kt, bs, L.scale, out, ld, idx, kn, vn);
    } else {
      qk_tile_dot<RG, C, false>(qp, D, kt, bs, L.scale, out, ld, idx, nullptr, nullptr);
    }
  }
  for (; v < nv; ++v) {
    kt[0] = tile(v * 16), out[0] = sc + v * 16;
    if (pf) {
      kn[0] = v + 1 < nv ? tile((v + 1) * 16) : nullptr, vn[0] = vrows(v * 16);
      qk_tile_dot<RG, 1, true>(qp, D, kt, bs, L.scale, out, ld, idx, kn, vn);
    } else {
      qk_tile_dot<RG, 1, false>(qp, D, kt, bs, L.scale, out, ld, idx, nullptr, nullptr);
    }
  }
}

// out[r][d0 .. d0 + 16 NV) = inv_sum[r] * sum_j p(r, j) V[j][d0 ..], p as bf16 pairs (row r at
// pp + r * ldp, pair j / 2; an odd n_keys has a zero weight after its last key).
template <int RG, int NV>
inline void pv_tile_dot(const AttnLayer& L, const AttnSeq& s, int kvh, int n_keys, const uint32_t* pp, int ldp, int d0,
                        float* out, const float* inv_sum, __m512i idx) {
  const int D = L.head_dim, bs = L.block_size;
  const size_t block_stride = size_t(L.num_kv_heads) * bs * D;
  __m512 acc[RG][NV];
  for (int r = 0; r < RG; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  auto step = [&](int j, const __m512i* vv) {
    for (int r = 0; r < RG; ++r) {
      const __m512i pv = _mm512_set1_epi32(int(pp[size_t(r) * ldp + j / 2]));
      for (int v = 0; v < NV; ++v) acc[r][v] = dp(acc[r][v], pv, vv[v]);
    }
  };
  for (int j0 = 0; j0 < n_keys; j0 += bs) {
    const uint16_t* vb = static_cast<const uint16_t*>(L.v_cache) + size_t(s.block_table[j0 / bs]) * block_stride +
                         size_t(kvh) * bs * D + d0;
    const int len = std::min(bs, n_keys - j0);
    int jj = 0;
    for (; jj + 2 <= len; jj += 2) {
      __m512i vv[NV];
      for (int v = 0; v < NV; ++v) vv[v] = pair16(vb + size_t(jj) * D + 16 * v, vb + size_t(jj + 1) * D + 16 * v, idx);
      step(j0 + jj, vv);
    }
    if (jj < len) {  // the odd last key, paired with zeros (its partner weight is zero too)
      __m512i vv[NV];
      for (int v = 0; v < NV; ++v)
        vv[v] = _mm512_maskz_permutexvar_epi16(
            0x55555555u, idx,
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vb + size_t(jj) * D + 16 * v))));
      step(j0 + jj, vv);
    }
  }
  for (int r = 0; r < RG; ++r)
    for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(out + size_t(r) * D + d0 + 16 * v, _mm512_mul_ps(acc[r][v], _mm512_set1_ps(inv_sum[r])));
}

template <int RG>
void pv_all_dot(const AttnLayer& L, const AttnSeq& s, int kvh, int n_keys, const uint32_t* pp, int ldp, float* out,
                const float* inv_sum, __m512i idx) {
  const int D = L.head_dim;
  // Column passes of 48, then one of 32 where 32 are left (head_dim 128: 48 + 48 + 32, three walks
  // over the keys' weights instead of four), then 16s.
  int d0 = 0;
  for (; d0 + 48 <= D && D - d0 != 32; d0 += 48) pv_tile_dot<RG, 3>(L, s, kvh, n_keys, pp, ldp, d0, out, inv_sum, idx);
  for (; d0 + 32 <= D; d0 += 32) pv_tile_dot<RG, 2>(L, s, kvh, n_keys, pp, ldp, d0, out, inv_sum, idx);
  for (; d0 + 16 <= D; d0 += 16) pv_tile_dot<RG, 1>(L, s, kvh, n_keys, pp, ldp, d0, out, inv_sum, idx);
}

constexpr int kDotMaxQ = 4096;  // rep x head_dim of one KV head's queries, as bf16 on the stack

}  // namespace

bool attention_bf16_dot_takes(const AttnLayer& L) {
  const int rep = L.num_heads / L.num_kv_heads;
  return L.kv_bf16 && L.block_size % 16 == 0 && L.head_dim % 16 == 0 && rep <= 64 && rep * L.head_dim <= kDotMaxQ;
}

void attention_bf16_dot(const AttnLayer& L, const AttnSeq& s, int kvh, int t0, int t1, float* scratch) {
  const int D = L.head_dim, bs = L.block_size;
  const int rep = L.num_heads / L.num_kv_heads;
  const int qstride = L.num_heads * D;
  const __m512i idx = _mm512_load_si512(kPairIdx);
  alignas(64) uint16_t qb[kDotMaxQ];
  for (int t = t0; t < t1; ++t) {
    const int n_keys = s.start_pos + t + 1;
    const int ld = (n_keys + bs - 1) / bs * bs;
    to_bf16(s.q + size_t(t) * qstride + size_t(kvh) * rep * D, qb, rep * D);
    const uint32_t* qp = reinterpret_cast<const uint32_t*>(qb);  // [rep][D / 2] pairs
    float* o = s.out + size_t(t) * qstride + size_t(kvh) * rep * D;
    float* scores = scratch;
    // The task's first query token walks K and V in from memory (in a decode step, its only one):
    // its first head group prefetches as it goes.
    const bool pf = t == t0;
    int r = 0;
    for (; r + 8 <= rep; r += 8)
      qk_all_dot<8>(L, s, kvh, n_keys, qp + size_t(r) * (D / 2), scores + size_t(r) * ld, ld, idx, pf && r == 0);
    for (; r + 4 <= rep; r += 4)
      qk_all_dot<4>(L, s, kvh, n_keys, qp + size_t(r) * (D / 2), scores + size_t(r) * ld, ld, idx, pf && r == 0);
    for (; r < rep; ++r)
      qk_all_dot<1>(L, s, kvh, n_keys, qp + size_t(r) * (D / 2), scores + size_t(r) * ld, ld, idx, pf && r == 0);
    float inv_sum[64];
    softmax_rows(scores, rep, ld, n_keys, inv_sum);
    // Each row's weights to bf16 in place (row r keeps its base; bf16 j at byte 2j never passes a
    // float not yet read), then a zero weight after an odd last key.
    for (r = 0; r < rep; ++r) {
      uint16_t* pb = reinterpret_cast<uint16_t*>(scores + size_t(r) * ld);
      to_bf16(scores + size_t(r) * ld, pb, n_keys);
      if (n_keys % 2) pb[n_keys] = 0;
    }
    const uint32_t* pp = reinterpret_cast<const uint32_t*>(scores);  // row r at pp + r * ld
    r = 0;
    for (; r + 8 <= rep; r += 8)
      pv_all_dot<8>(L, s, kvh, n_keys, pp + size_t(r) * ld, ld, o + size_t(r) * D, inv_sum + r, idx);
    for (; r + 4 <= rep; r += 4)
      pv_all_dot<4>(L, s, kvh, n_keys, pp + size_t(r) * ld, ld, o + size_t(r) * D, inv_sum + r, idx);
    for (; r < rep; ++r) pv_all_dot<1>(L, s, kvh, n_keys, pp + size_t(r) * ld, ld, o + size_t(r) * D, inv_sum + r, idx);
  }
}

}  // namespace ee::cpu::avx512
