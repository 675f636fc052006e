// AMX kernels, the only translation unit built with -mamx-tile -mamx-bf16 -mamx-int8 (binding.gyp),
// so the rest of the binary runs on CPUs without AMX. Selected at run time (kernels.cc, qgemm.cc)
// only when amx_usable(): CPUID reports AMX-TILE, AMX-BF16 and AMX-INT8 and Linux granted the tile
// state. The tile code is amx.inc (configuration, int8) and amx_bf16.inc (bf16: its own activation
// layout, prepared here too); the int8 activations' preparation is the AVX-512 kernels' (the CPU has
// AVX-512 wherever it has AMX).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/qgemm.h"

#ifdef EE_AMX_EMULATE  // tools/amx-emu-check.sh: the same kernels on a software tile model
#include "../../tools/amx_emulate.h"
#else
#define EE_TILE_CONFIG(c) _tile_loadconfig(c)
#define EE_TILE_RELEASE() _tile_release()
#define EE_TILE_ZERO(t) _tile_zero(t)
#define EE_TILE_LOAD(t, p, s) _tile_loadd(t, p, s)
#define EE_TILE_STORE(t, p, s) _tile_stored(t, p, s)
#define EE_TILE_DP_BF16(c, a, b) _tile_dpbf16ps(c, a, b)
#define EE_TILE_DP_S8(c, a, b) _tile_dpbssd(c, a, b)
#endif

namespace ee::cpu {
namespace avx512 {
void prepare_act8_s8(const float* x, int ldx, const Act& a, int m0, int m1);
}  // namespace avx512

namespace amx {
namespace {
// qgemm.h's epilogue for mr rows of a [32][32] int32 tile buffer: y = float(c) * sw * sx.
inline void epilogue_rows(const int32_t* c, int mr, const float* sw, const float* sx, float* y, int ldy) {
  // (one plane: y = float(d) * sw * s1)
  const __m512 s0 = _mm512_loadu_ps(sw), s1 = _mm512_loadu_ps(sw + 16);
  for (int i = 0; i < mr; ++i) {
    const __m512 f0 = _mm512_cvtepi32_ps(_mm512_load_si512(c + 32 * i));
    const __m512 f1 = _mm512_cvtepi32_ps(_mm512_load_si512(c + 32 * i + 16));
    _mm512_storeu_ps(y + size_t(i) * ldy, _mm512_mul_ps(_mm512_mul_ps(f0, s0), _mm512_set1_ps(sx[i])));
    _mm512_storeu_ps(y + size_t(i) * ldy + 16, _mm512_mul_ps(_mm512_mul_ps(f1, s1), _mm512_set1_ps(sx[i])));
  }
}
// Two planes: rows 0..mr of c are plane 1's sums, rows 16..16+mr plane 2's:
// y = fma(float(d1), s1, float(d2) * s2) * sw.
inline void epilogue_planes(const int32_t* c, int mr, const float* sw, const float* s1, const float* s2, float* y,
                            int ldy) {
  for (int h = 0; h < 2; ++h) {
    const __m512 w = _mm512_loadu_ps(sw + 16 * h);
    for (int i = 0; i < mr; ++i) {
      const __m512 f1 = _mm512_cvtepi32_ps(_mm512_load_si512(c + 32 * i + 16 * h));
      const __m512 f2 = _mm512_cvtepi32_ps(_mm512_load_si512(c + 32 * (16 + i) + 16 * h));
      const __m512 f = _mm512_fmadd_ps(f1, _mm512_set1_ps(s1[i]), _mm512_mul_ps(f2, _mm512_set1_ps(s2[i])));
      _mm512_storeu_ps(y + size_t(i) * ldy + 16 * h, _mm512_mul_ps(f, w));
    }
  }
}
}  // namespace
}  // namespace amx
}  // namespace ee::cpu

#include "cpu/amx.inc"
#include "cpu/amx_bf16.inc"
#include "cpu/amx_model.inc"

namespace ee::cpu::amx {

namespace {

// The exact integer sum of one s8 activation row and one plain weight row (the N % 32 tail):
// widened to 16 bits, vpmaddwd.
inline int32_t dot1_s8(const int8_t* x, const int8_t* w, int Kp) {
  __m512i acc = _mm512_setzero_si512();
  for (int k = 0; k < Kp; k += 32) {
    const __m512i a = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k)));
    const __m512i b = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k)));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
  }
  return _mm512_reduce_add_epi32(acc);
}

void gemm_int8(const Act& a, const QMatrix& w, int N, int n0, int n1, float* y, int ldy) {
  const int full = N / kPackRows * kPackRows;
  const int b0 = n0 / kPackRows, b1 = std::min(n1, full) / kPackRows;
  if (b0 < b1) gemm_s8_blocks(a, w, b0, b1, y, ldy);
  const int8_t* x = static_cast<const int8_t*>(a.data);
  const size_t ps = size_t(a.M) * a.Kp;
  const float* s1 = act_scales(a);
  const float* s2 = s1 + a.M;
  for (int n = std::max(n0, full); n < n1; ++n)
    for (int m = 0; m < a.M; ++m) {
      const int8_t* xr = x + size_t(m) * a.Kp;
      const int8_t* wr = w.q + size_t(n) * a.Kp;
      const int32_t d1 = dot1_s8(xr, wr, a.Kp);
      y[size_t(m) * ldy + n] = a.precise ? epilogue2(d1, dot1_s8(xr + ps, wr, a.Kp), s1[m], s2[m], w.scale[n])
                                         : epilogue1(d1, s1[m], w.scale[n]);
    }
}

// tdp* on the four accumulators, `iters` x 4 times.
template <bool INT8>
double peak(long iters) {
  const TileConfig c = tile_config(16, 16);
  EE_TILE_CONFIG(&c);
  alignas(64) static const uint8_t ones[16 * 64] = {};
  EE_TILE_LOAD(4, ones, 64);
  EE_TILE_LOAD(5, ones, 64);
  EE_TILE_LOAD(6, ones, 64);
  EE_TILE_LOAD(7, ones, 64);
  EE_TILE_ZERO(0);
  EE_TILE_ZERO(1);
  EE_TILE_ZERO(2);
  EE_TILE_ZERO(3);
  for (long it = 0; it < iters; ++it) {
    if constexpr (INT8) {
      EE_TILE_DP_S8(0, 4, 6);
      EE_TILE_DP_S8(1, 4, 7);
      EE_TILE_DP_S8(2, 5, 6);
      EE_TILE_DP_S8(3, 5, 7);
    } else {
      EE_TILE_DP_BF16(0, 4, 6);
      EE_TILE_DP_BF16(1, 4, 7);
      EE_TILE_DP_BF16(2, 5, 6);
      EE_TILE_DP_BF16(3, 5, 7);
    }
  }
  alignas(64) float sink[16 * 16];
  EE_TILE_STORE(0, sink, 64);
  volatile float keep = sink[0];
  (void)keep;
  release();
  return double(iters) * 4 * 16 * 16 * (INT8 ? 64 : 32) * 2;  // 2 ops per multiply-add
}

double dot_peak8(long iters) { return peak<true>(iters); }

// Rows up to which a bf16 GEMM runs on the AVX-512 tile model (amx_model.inc) when it matches.
// NOTE: 4: a decode step of one to four sequences; from 5 rows on the tiles' throughput wins over
// twice the AVX-512 instructions of a model product (bench/results/cpu-int8-amx-intel.json).
constexpr int kModelRows = model::kMaxRows;

// Which model gives the tile unit's exact bits on this CPU: both tried on random products of 1..3
// rows over K = 256 (8 tile products per plane), precise and not, against the tiles themselves.
TileModel select_tile_model() {
  std::mt19937 rng(27);
  std::uniform_real_distribution<float> u(-1, 1);
  const int N = 64, K = 256;
  std::vector<bf16_t> w(size_t(N) * K), packed(packed_elems(N, K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(u(rng) * (i % 7 == 0 ? 40.0f : 1.0f));
  pack_matrix(w.data(), N, K, packed.data(), 0, N);
  for (TileModel tm : {TileModel::kSdm, TileModel::kSequential}) {
    bool same = true;
    for (int M = 1; M <= 3 && same; ++M)
      for (bool precise : {true, false}) {
        // (outputs sized for kModelRows rows: the model's code for 4 rows is reachable from here)
        std::vector<float> x(size_t(M) * K), tiles(size_t(kModelRows) * N), mod(size_t(kModelRows) * N);
        for (size_t i = 0; i < x.size(); ++i) x[i] = u(rng) * (i % 5 == 0 ? 100.0f : 1.0f);
        Act a;
        a.M = M, a.K = K, a.Kp = pad_k(K), a.precise = precise;
        std::vector<uint8_t> buf(act_bytes(M, K) + 64);
        a.data = buf.data();
        prepare_act(x.data(), K, a, 0, M);
        gemm_bf16_blocks(a, packed.data(), 0, N / kPackRows, tiles.data(), N);
        model::gemm_blocks(tm, a, packed.data(), 0, N / kPackRows, mod.data(), N);
        same = same && std::memcmp(tiles.data(), mod.data(), size_t(M) * N * sizeof(float)) == 0;
      }
    if (same) return tm;
  }
  return TileModel::kNone;
}

TileModel tile_model() {
  static const TileModel tm = select_tile_model();
  return tm;
}

// Which accumulation order the tile unit follows, among scalar candidates (for the next AVX-512 model
// when neither of amx_model.inc's matches): one row, one plane, 4 tile products (K = 128) of random
// data, each of the 64 outputs against each candidate. Products are exact in double (8-bit
// significands); the candidates differ in where the sum is rounded to fp32:
//   "sdm", "sequential": amx_model.inc's models;
//   "pair-fused": c = fl(c + (e_k + o_k)) per pair k (the pair's two products added exactly);
//   "tile-fused": c = fl(c + sum of the tile product's 32 products, exact);
//   "tile-rounded": s = fl(sum of the 32 products, exact), c = fl(c + s).
const char* diagnose_tile_order() {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1, 1);
  const int N = 64, K = 128;
  std::vector<bf16_t> w(size_t(N) * K), packed(packed_elems(N, K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(u(rng) * (i % 3 == 0 ? 30.0f : 1.0f));
  pack_matrix(w.data(), N, K, packed.data(), 0, N);
  std::vector<float> x(K), tiles(N);
  for (int k = 0; k < K; ++k) x[size_t(k)] = bf16_to_f32(f32_to_bf16(u(rng) * (k % 4 == 0 ? 50.0f : 1.0f)));
  Act a;
  a.M = 1, a.K = K, a.Kp = pad_k(K), a.precise = false;
  std::vector<uint8_t> buf(act_bytes(1, K) + 64);
  a.data = buf.data();
  prepare_act(x.data(), K, a, 0, 1);
  gemm_bf16_blocks(a, packed.data(), 0, N / kPackRows, tiles.data(), N);
  const char* names[] = {"sdm", "sequential", "pair-fused", "tile-fused", "tile-rounded"};
  for (int h = 0; h < 5; ++h) {
    bool same = true;
    for (int n = 0; n < N && same; ++n) {
      float c = 0;
      for (int t = 0; t < K / 32; ++t) {
        double exact = 0;
        float fe = 0, fo = 0;
        for (int p = 0; p < 16; ++p) {
          const int k = 32 * t + 2 * p;
          const double e = double(x[size_t(k)]) * bf16_to_f32(w[size_t(n) * K + k]);
          const double o = double(x[size_t(k) + 1]) * bf16_to_f32(w[size_t(n) * K + k + 1]);
          fe = float(double(fe) + e), fo = float(double(fo) + o);  // an exact product, one rounding
          if (h == 1) c = float(double(float(double(c) + e)) + o);
          if (h == 2) c = float(double(c) + (e + o));
          exact += e + o;
        }
        if (h == 0) c = float(double(float(double(c) + fe)) + fo);
        if (h == 3) c = float(double(c) + exact);
        if (h == 4) c = float(double(c) + double(float(exact)));
      }
      same = c == tiles[size_t(n)];
    }
    if (same) return names[h];
  }
  return "unknown";
}

}  // namespace

void gemm_bf16(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy) {
  const int full = N / kPackRows * kPackRows;
  const int b0 = n0 / kPackRows, b1 = std::min(n1, full) / kPackRows;
  if (b0 < b1) {
    const TileModel tm = a.M <= kModelRows ? tile_model() : TileModel::kNone;
    if (tm != TileModel::kNone) model::gemm_blocks(tm, a, w, b0, b1, y, ldy);
    else gemm_bf16_blocks(a, w, b0, b1, y, ldy);
  }
  for (int n = std::max(n0, full); n < n1; ++n)
    for (int m = 0; m < a.M; ++m) y[size_t(m) * ldy + n] = dot_row(a, m, w + size_t(n) * a.Kp);
}

const char* bf16_tile_order() {
  static const char* order = diagnose_tile_order();
  return order;
}

const char* bf16_small_rows_kernel() {
  switch (tile_model()) {
    case TileModel::kSdm: return "avx512bf16 (tile-exact, sdm model)";
    case TileModel::kSequential: return "avx512bf16 (tile-exact, sequential model)";
    default: return "amx-bf16";
  }
}

double dot_peak_bf16(long iters) { return peak<false>(iters); }

extern const Int8Kernels kInt8Kernels = {"amx-int8", avx512::prepare_act8_s8, gemm_int8, dot_peak8};

}  // namespace ee::cpu::amx
