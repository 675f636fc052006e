// Decode attention: one query row (REP query heads per KV head) against its paged keys, split into
// key partitions (flash-decoding) that a combine kernel merges in a fixed order.
// - Up to 8 rows (partitions of 32 keys, many small blocks for parallelism): attn_tile_kernel, fp32
//   on CUDA cores, 4 warps x 4 query vectors, each 32-key chunk staged through shared memory.
// - Beyond (partitions of 64 / 128 keys): attn_decode_mma_kernel, the REP heads as the M rows of
//   tensor-core mmas: faster than the best CUDA-core kernel tried with a bf16 cache, about even
//   with an fp32 one (whose V fragments are built by hand). Figures: native/cuda/README.md.

#include "device.cuh"
#include "kernels.cuh"
#include "launch.cuh"
#include "mma.cuh"

#include <algorithm>
#include <type_traits>

namespace eec {

namespace {

constexpr int kWarpKeys = 32;
constexpr int kTargetBlocks = 2048;
constexpr int kChunk = 32;

// Few rows: tiles of NW warps x QPW query vectors (REP used) of one row and KV head, one key
// partition; each 32-key chunk staged through shared memory (K [32][D + 4], V [32][D]), lane j
// scoring key j against its warp's queries, online softmax per query. Faster for a single stream
// than a warp-per-chunk kernel, whose lanes each walk a whole key row: a long serial path when
// there are few blocks (native/cuda/README.md).
template <int REP, int D, typename KV, int NW, int QPW>
__global__ void __launch_bounds__(NW * 32)
    attn_tile_kernel(const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int bs, int P,
                     int NP, float scale, int planes, float* part_acc, float* part_ml, bf16* act) {
  constexpr int NQ = NW * QPW;  // query vectors per tile
  constexpr int NT = NW * 32;   // threads
  constexpr int DL = D / 32;    // output dims per lane
  static_assert(NQ % REP == 0, "a tile holds whole rows");
  if (int(blockIdx.x) >= m.counts[0]) return;
  const int tile = blockIdx.x, g = blockIdx.y, p = blockIdx.z;  // decode tiles come first
  const int r0 = m.tile_row[tile], nr = m.tile_n[tile];
  const int ctx_max = m.pos[r0 + nr - 1] + 1;  // the tile's last row sees the most keys
  const int k0 = p * P;
  if (k0 >= ctx_max) return;
  const int k1 = min(ctx_max, k0 + P);
  __shared__ __align__(16) float ks[kChunk][D + 4];
  __shared__ __align__(16) float vs[kChunk][D];
  __shared__ __align__(16) float qs[NQ][D];
  const int t = threadIdx.x, w = t / 32, lane = t % 32;
  const size_t QD = size_t(heads) * D;
  for (int e = t; e < NQ * D; e += NT) {
    const int qi = e / D, d = e % D, row = qi / REP, h = qi % REP;
    qs[qi][d] = row < nr ? q[size_t(r0 + row) * QD + size_t(g * REP + h) * D + d] : 0.0f;
  }
  float mrun[QPW], lrun[QPW], acc[QPW][DL];
  int qpos[QPW];
#pragma unroll
  for (int i = 0; i < QPW; ++i) {
    const int row = (w * QPW + i) / REP;
    qpos[i] = row < nr ? m.pos[r0 + row] : -1;
    mrun[i] = -INFINITY;
    lrun[i] = 0;
#pragma unroll
    for (int d = 0; d < DL; ++d) acc[i][d] = 0;
  }
  const int32_t* bt = m.bt + m.bt_off[r0];
  for (int j0 = k0; j0 < k1; j0 += kChunk) {
    const int n = min(kChunk, k1 - j0);
    __syncthreads();  // the previous chunk is consumed (and qs is written, first time)
    for (int e = t; e < kChunk * (D / 4); e += NT) {
      const int j = e / (D / 4), d4 = e % (D / 4);  // a warp reads one key's D values: coalesced
      float4 k4 = make_float4(0, 0, 0, 0), v4 = k4;
      if (j < n) {
        const int key = j0 + j;
        const size_t off = ((size_t(bt[key / bs]) * bs + key % bs) * KVH + g) * D + 4 * d4;
        k4 = load4(kc + off);
        v4 = load4(vc + off);
      }
      *reinterpret_cast<float4*>(&ks[j][4 * d4]) = k4;
      *reinterpret_cast<float4*>(&vs[j][4 * d4]) = v4;
    }
    __syncthreads();
    float s[QPW];
#pragma unroll
    for (int i = 0; i < QPW; ++i) s[i] = 0;
#pragma unroll 8
    for (int d4 = 0; d4 < D / 4; ++d4) {
      const float4 k4 = *reinterpret_cast<const float4*>(&ks[lane][4 * d4]);
#pragma unroll
      for (int i = 0; i < QPW; ++i) {
        const float4 q4 = *reinterpret_cast<const float4*>(&qs[w * QPW + i][4 * d4]);
        s[i] = fmaf(q4.x, k4.x, s[i]);
        s[i] = fmaf(q4.y, k4.y, s[i]);
        s[i] = fmaf(q4.z, k4.z, s[i]);
        s[i] = fmaf(q4.w, k4.w, s[i]);
      }
    }
    const int key = j0 + lane;
#pragma unroll
    for (int i = 0; i < QPW; ++i) {
      const bool ok = lane < n && key <= qpos[i];
      const float sc = ok ? s[i] * scale : -INFINITY;
      const float m_new = fmaxf(mrun[i], warp_max(sc));
      const float pr = ok ? expf(sc - m_new) : 0.0f;
      const float c = mrun[i] == -INFINITY ? 0.0f : expf(mrun[i] - m_new);
      lrun[i] = lrun[i] * c + warp_sum(pr);
      mrun[i] = m_new;
#pragma unroll
      for (int d = 0; d < DL; ++d) acc[i][d] *= c;
      s[i] = pr;
    }
    for (int j = 0; j < n; ++j) {
      float v[DL];
#pragma unroll
      for (int d = 0; d < DL; ++d) v[d] = vs[j][lane * DL + d];
#pragma unroll
      for (int i = 0; i < QPW; ++i) {
        const float pj = __shfl_sync(kFull, s[i], j);
#pragma unroll
        for (int d = 0; d < DL; ++d) acc[i][d] = fmaf(pj, v[d], acc[i][d]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < QPW; ++i) {
    if (qpos[i] < 0) continue;
    const int qi = w * QPW + i, r = r0 + qi / REP, hq = qi % REP, h = g * REP + hq;
    if (NP == 1) {
#pragma unroll
      for (int d = 0; d < DL; ++d)
        store_act(acc[i][d] / lrun[i], act, size_t(r) * QD + size_t(h) * D + lane * DL + d, size_t(T) * QD, planes);
    } else {
      // Partials exist only for one-row tiles: indexed by the tile's place in this launch.
      const size_t base = ((size_t(blockIdx.x) * KVH + g) * NP + p) * REP + hq;
#pragma unroll
      for (int d = 0; d < DL; ++d) part_acc[base * D + lane * DL + d] = acc[i][d];
      if (lane == 0) {
        part_ml[base * 2] = mrun[i];
        part_ml[base * 2 + 1] = lrun[i];
      }
    }
  }
}

__global__ void attn_combine_kernel(const float* part_acc, const float* part_ml, RowMeta m, int T, int heads, int KVH,
                                    int D, int P, int NP, int planes, bf16* act) {
  if (int(blockIdx.x) >= m.counts[0]) return;
  const int r = m.tile_row[blockIdx.x], h = blockIdx.y, t = threadIdx.x;  // one-row tiles from 0
  const int rep = heads / KVH, g = h / rep, hh = h % rep;
  const int np = (m.pos[r] + P) / P;  // ceil((pos + 1) / P): only partitions holding this row's keys
  const size_t base = (size_t(blockIdx.x) * KVH + g) * NP * rep + hh;
  float M = -INFINITY;
  for (int p = 0; p < np; ++p) M = fmaxf(M, part_ml[(base + size_t(p) * rep) * 2]);
  float L = 0, O = 0;
  for (int p = 0; p < np; ++p) {
    const size_t i = base + size_t(p) * rep;
    const float f = expf(part_ml[i * 2] - M);
    L += part_ml[i * 2 + 1] * f;
    O += part_acc[i * D + t] * f;
  }
  const size_t QD = size_t(heads) * D;
  store_act(O / L, act, size_t(r) * QD + size_t(h) * D + t, size_t(T) * QD, planes);
}

// ---- tensor-core decode (rows beyond 8) -------------------------------------------------------------
// The REP query heads of one KV head are the M rows of mma.sync m16n8k16 (head h in row h, REP <= 16,
// rows past REP zero), so one K row is read once for all of them and the FLOPs go to tensor cores:
// the CUDA-core version was instruction- and latency-bound, far from HBM bandwidth
// (native/cuda/README.md). Block: NWK = P / 32 warps, warp wk one 32-key chunk of the partition.
// - S = q · K^T: K rows read straight from global memory in 16-byte pieces. The dot product does
//   not care in which order the dims are summed, so the k index of the fragments is permuted:
//   lane t of an mma row group loads dims [d0 + 8t, d0 + 8t + 8) of its key (one 16-byte bf16
//   load, or two fp32 ones) and uses them as b0, b1 of two k-steps; q's A fragments are loaded
//   with the same permutation. (Fragment layout: see mma() in mma.cuh.)
// - V goes to shared memory with cp.async (no registers held while in flight) and is read as B
//   fragments: ldmatrix.trans for bf16, pairs of fp32 split into hi / lo for an fp32 cache.
// - Precision as in attn_prefill.cu: with two planes q and P are split hi / lo, an fp32 cache's K
//   and V too, three mmas per product (bf16x3, fp32-grade).

template <int D, typename KV>
__host__ __device__ constexpr int dec_v_ld() {  // V tile row stride (elements): conflict-free fragment reads
  return sizeof(KV) == 2 ? D + 8 : D + 4;
}
template <int REP, int D, typename KV, int NWK>
constexpr size_t dec_mma_smem() {
  const size_t v = size_t(NWK) * kWarpKeys * dec_v_ld<D, KV>() * sizeof(KV);
  const size_t acc = size_t(NWK) * REP * D * sizeof(float);
  return v > acc ? v : acc;
}

// 8 consecutive cache elements as 4 bf16 pairs (hi) and, for fp32, their lo pairs.
__device__ __forceinline__ void load8_pairs(const bf16* p, uint32_t* hi, uint32_t*) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  hi[0] = u.x, hi[1] = u.y, hi[2] = u.z, hi[3] = u.w;
}
__device__ __forceinline__ void load8_pairs(const float* p, uint32_t* hi, uint32_t* lo) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  split2<true>(a.x, a.y, hi[0], lo[0]);
  split2<true>(a.z, a.w, hi[1], lo[1]);
  split2<true>(b.x, b.y, hi[2], lo[2]);
  split2<true>(b.z, b.w, hi[3], lo[3]);
}

// The NW warps' online-softmax states of a (row, KV head) merged in warp order. Warp w stashes its
// running max / sum of heads g and g + 8 (mrun, lrun) and its O fragments (o) in wm / wl / wacc
// (wacc: [NW][REP][D] floats of shared memory that no warp still reads); then the block folds the
// warps and calls emit(h, d, M, L, O) once per (head, dim), M in the log2 domain. Warp 0 must hold
// a key of every head (M finite). Every thread of the block calls it.
template <int REP, int D, int NW, typename Emit>
__device__ __forceinline__ void merge_warps(int w, int g, int tq, const float (&mrun)[2], const float (&lrun)[2],
                                            const float (&o)[D / 8][4], float (*wm)[16], float (*wl)[16], float* wacc,
                                            Emit emit) {
#pragma unroll
  for (int ii = 0; ii < 2; ++ii) {
    const int h = g + 8 * ii;
    if (h >= REP) continue;
    if (tq == 0) {
      wm[w][h] = mrun[ii];
      wl[w][h] = lrun[ii];
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int c = 0; c < 2; ++c) wacc[(size_t(w) * REP + h) * D + 8 * n + 2 * tq + c] = o[n][2 * ii + c];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < REP * D; e += NW * 32) {
    const int h = e / D, d = e % D;
    float M = -INFINITY;
#pragma unroll
    for (int i = 0; i < NW; ++i) M = fmaxf(M, wm[i][h]);
    float L = 0, O = 0;
#pragma unroll
    for (int i = 0; i < NW; ++i) {
      const float f = wm[i][h] == -INFINITY ? 0.0f : exp2f(wm[i][h] - M);
      L += wl[i][h] * f;
      O += wacc[(size_t(i) * REP + h) * D + d] * f;
    }
    emit(h, d, M, L, O);
  }
}

template <int REP, int D, typename KV, bool QLO, int NWK>
__global__ void __launch_bounds__(NWK * 32)
    attn_decode_mma_kernel(const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int bs,
                           int NP, float scale_log2, float* part_acc, float* part_ml, bf16* act) {
  constexpr bool KVLO = sizeof(KV) == 4;
  constexpr int P = NWK * kWarpKeys;
  constexpr int NPASS = D / 32;  // 32-dim passes of S, two k-steps each
  constexpr int NO = D / 8;      // output n-tiles
  constexpr int LDV = dec_v_ld<D, KV>();
  static_assert(REP <= 16 && D % 32 == 0, "REP <= 16 heads in the mma rows");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float wm[NWK][16], wl[NWK][16];
  if (int(blockIdx.x) >= m.counts[0]) return;
  const int kvh = blockIdx.y;
  const int r = m.tile_row[blockIdx.x];
  const int ctx = m.pos[r] + 1;
  if (int(blockIdx.z) * P >= ctx) return;
  const int t = threadIdx.x, wk = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
  const size_t QD = size_t(heads) * D;
  KV* vs = reinterpret_cast<KV*>(smem_raw) + size_t(wk) * kWarpKeys * LDV;  // this warp's V tile
  float* wacc = reinterpret_cast<float*>(smem_raw);                         // [NWK][REP][D], after V

  // q's A fragments in the permuted k order: pass ps, k-step j: a0 / a2 = dims d0 + 8t + 4j + {0,1}
  // / {2,3} of head g (a1 / a3: head g + 8).
  uint32_t qh[NPASS][2][4], ql[QLO ? NPASS : 1][2][4];
#pragma unroll
  for (int ps = 0; ps < NPASS; ++ps)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int h = g + 8 * i;
      float4 a = make_float4(0, 0, 0, 0), b = a;
      if (h < REP) {
        const float* qp = q + size_t(r) * QD + size_t(kvh * REP + h) * D + 32 * ps + 8 * tq;
        a = *reinterpret_cast<const float4*>(qp);
        b = *reinterpret_cast<const float4*>(qp + 4);
      }
      uint32_t dummy;
      split2<QLO>(a.x, a.y, qh[ps][0][i], QLO ? ql[QLO ? ps : 0][0][i] : dummy);
      split2<QLO>(a.z, a.w, qh[ps][0][2 + i], QLO ? ql[QLO ? ps : 0][0][2 + i] : dummy);
      split2<QLO>(b.x, b.y, qh[ps][1][i], QLO ? ql[QLO ? ps : 0][1][i] : dummy);
      split2<QLO>(b.z, b.w, qh[ps][1][2 + i], QLO ? ql[QLO ? ps : 0][1][2 + i] : dummy);
    }

  const PagedRows rows = paged_rows(m.bt + m.bt_off[r], bs, KVH, kvh, D);
  const auto row_of = [&](const KV* cache, int key) { return cache + rows(key); };

  for (int p = blockIdx.z; p * P < ctx; p += gridDim.z) {
    const int j0 = p * P + kWarpKeys * wk;
    const int n = max(0, min(kWarpKeys, ctx - j0));  // this warp's keys (0: past the context)
    float mw[2] = {-INFINITY, -INFINITY}, lw[2] = {0, 0};
    float o[NO][4];
#pragma unroll
    for (int i = 0; i < NO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0;
    if (n > 0) {
      // V tile -> shared memory, in flight while S is computed (keys past n repeat the last).
      constexpr int CPR = D * int(sizeof(KV)) / 16;  // 16-byte pieces per row
#pragma unroll 4
      for (int c = lane; c < kWarpKeys * CPR; c += 32) {
        const int j = c / CPR, piece = c % CPR;
        cp_async16(vs + j * LDV + piece * (16 / int(sizeof(KV))),
                   row_of(vc, j0 + min(j, n - 1)) + piece * (16 / int(sizeof(KV))));
      }
      // S: 4 n-tiles of 8 keys; lane g's B column is key 8 jn + g.
      float s[4][4];
      const KV* kr[4];
#pragma unroll
      for (int jn = 0; jn < 4; ++jn) {
        s[jn][0] = s[jn][1] = s[jn][2] = s[jn][3] = 0;
        kr[jn] = row_of(kc, j0 + min(8 * jn + g, n - 1)) + 8 * tq;
      }
#pragma unroll
      for (int ps = 0; ps < NPASS; ++ps)
#pragma unroll
        for (int jn = 0; jn < 4; ++jn) {
          uint32_t bh[4], bl[4];
          load8_pairs(kr[jn] + 32 * ps, bh, bl);
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            mma(s[jn], qh[ps][j], bh[2 * j], bh[2 * j + 1]);
            if (QLO) mma(s[jn], ql[QLO ? ps : 0][j], bh[2 * j], bh[2 * j + 1]);
            if (KVLO) mma(s[jn], qh[ps][j], bl[2 * j], bl[2 * j + 1]);
          }
        }
        // Softmax over the chunk per row (head); rows g (i = 0) and g + 8 (i = 1).
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float mx = -INFINITY;
#pragma unroll
        for (int jn = 0; jn < 4; ++jn)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float& v = s[jn][2 * i + c];
            v = 8 * jn + 2 * tq + c < n ? v * scale_log2 : -INFINITY;
            mx = fmaxf(mx, v);
          }
        mx = quad_max(mx);  // finite: key 0 of the chunk is valid
        float sum = 0;
#pragma unroll
        for (int jn = 0; jn < 4; ++jn)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float& v = s[jn][2 * i + c];
            v = exp2f(v - mx);
            sum += v;
          }
        mw[i] = mx;
        lw[i] = quad_sum(sum);
      }
      cp_async_wait_all();
      __syncwarp();
      // O += P · V, two k-steps of 16 keys.
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        uint32_t ph[4], pl[4];
        split2<QLO>(s[2 * c][0], s[2 * c][1], ph[0], pl[0]);
        split2<QLO>(s[2 * c][2], s[2 * c][3], ph[1], pl[1]);
        split2<QLO>(s[2 * c + 1][0], s[2 * c + 1][1], ph[2], pl[2]);
        split2<QLO>(s[2 * c + 1][2], s[2 * c + 1][3], ph[3], pl[3]);
#pragma unroll
        for (int nn = 0; nn < NO; nn += KVLO ? 1 : 2) {
          if constexpr (KVLO) {
            const float* v0 = reinterpret_cast<const float*>(vs) + (16 * c + 2 * tq) * LDV + 8 * nn + g;
            uint32_t bh0, bh1, bl0, bl1;
            split2<true>(v0[0], v0[LDV], bh0, bl0);
            split2<true>(v0[8 * LDV], v0[9 * LDV], bh1, bl1);
            mma(o[nn], ph, bh0, bh1);
            if (QLO) mma(o[nn], pl, bh0, bh1);
            mma(o[nn], ph, bl0, bl1);
          } else {  // two n-tiles per ldmatrix
            uint32_t vf[4];
            ldsm_x4_trans(vf, reinterpret_cast<const bf16*>(vs) + 16 * c * LDV + 8 * nn + ldsm_rows16(lane, LDV));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              mma(o[nn + h], ph, vf[2 * h], vf[2 * h + 1]);
              if (QLO) mma(o[nn + h], pl, vf[2 * h], vf[2 * h + 1]);
            }
          }
        }
      }
    }

    // Head h's (max M in the log2 domain, sum L, acc O) -> act, or a partial for the combine
    // kernel (which works in the natural-log domain: M is converted).
    const auto emit = [&](int h, int d, float M, float L, float O) {
      if (NP == 1) {
        store_act(O / L, act, size_t(r) * QD + size_t(kvh * REP + h) * D + d, size_t(T) * QD, QLO ? 2 : 1);
      } else {
        const size_t base = ((size_t(blockIdx.x) * KVH + kvh) * NP + p) * REP + h;
        part_acc[base * D + d] = O;
        if (d == 0) {
          part_ml[base * 2] = M * 0.6931471805599453f;  // log2 -> ln
          part_ml[base * 2 + 1] = L;
        }
      }
    };
    __syncthreads();  // every warp is done with its V tile: the buffer becomes wacc
    merge_warps<REP, D, NWK>(wk, g, tq, mw, lw, o, wm, wl, wacc, emit);  // warp 0 holds the partition's first key
    __syncthreads();  // wacc / the V tiles are reused by the next partition
  }
}

template <int REP, int D, typename KV, bool QLO, int NWK>
void launch_mma(dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int bs,
                int NP, float scale, float* pa, float* pm, bf16* act, cudaStream_t s) {
  constexpr size_t bytes = dec_mma_smem<REP, D, KV, NWK>();
  auto* kernel = attn_decode_mma_kernel<REP, D, KV, QLO, NWK>;  // its shared memory limit: attention_prepare
  const float sl = scale * 1.4426950408889634f;                 // the kernel's softmax is in the log2 domain
  launch(kernel, grid, NWK * 32, bytes, s, q, kc, vc, m, T, heads, KVH, bs, NP, sl, pa, pm, act);
}

// P = 32 (up to 8 rows): the tile kernel; P = 64 / 128: tensor cores with 2 / 4 warps.
template <int REP, int D, typename KV>
void launch_nw(int nwk, dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH,
               int bs, int NP, float scale, int planes, float* pa, float* pm, bf16* act, cudaStream_t s) {
#define EEC_MMA(QLO, NWK) \
  launch_mma<REP, D, KV, QLO, NWK>(grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, pa, pm, act, s)
  if (nwk == 1)
    launch(attn_tile_kernel<REP, D, KV, 4, 4>, dim3(grid.x, grid.y, NP), 128, 0, s, q, kc, vc, m, T, heads, KVH, bs,
           kWarpKeys, NP, scale, planes, pa, pm, act);
  else if (nwk == 2 && planes == 2) EEC_MMA(true, 2);
  else if (nwk == 2) EEC_MMA(false, 2);
  else if (planes == 2) EEC_MMA(true, 4);
  else EEC_MMA(false, 4);
#undef EEC_MMA
}

// f(std::integral_constant<int, REP>{}) for the runtime number of query heads per KV head (1, 2, 4,
// 8 or 16: attention_supported), which the kernels take as a template parameter.
template <typename F>
auto with_rep(int rep, F&& f) {
  switch (rep) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: return f(std::integral_constant<int, 16>{});
  }
}

template <int D, typename KV>
void launch_rep(int rep, int nw, dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads,
                int KVH, int bs, int NP, float scale, int planes, float* pa, float* pm, bf16* act, cudaStream_t s) {
  with_rep(rep, [&](auto r) {
    launch_nw<decltype(r)::value, D, KV>(nw, grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, pa, pm, act, s);
  });
}

template <typename KV>
void attention_t(const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int tiles, int heads, int KVH, int D,
                 int bs, int P, int NP, int planes, float* pa, float* pm, bf16* act, cudaStream_t s) {
  // Graphs are captured for max_model_len, so NP counts partitions no row may have: rather than a
  // block per partition (most exiting at once, a large share of the kernel's time at many rows),
  // ~kTargetBlocks blocks loop over partitions z, z + gridDim.z, ...
  const int z = std::max(1, std::min(NP, (kTargetBlocks + tiles * KVH - 1) / (tiles * KVH)));
  const dim3 grid(tiles, KVH, z);
  const float scale = 1.0f / sqrtf(float(D));
  const int rep = heads / KVH, nw = P / kWarpKeys;
  if (D == 128) launch_rep<128, KV>(rep, nw, grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, pa, pm, act, s);
  else launch_rep<64, KV>(rep, nw, grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, pa, pm, act, s);
}

// Past the 48 KB default of dynamic shared memory (an fp32 cache's V tiles): raised once per model,
// at its creation, for the kernels its shape can launch (as attention_prefill_prepare, and why).
template <int REP, int D, typename KV, bool QLO, int NWK>
cudaError_t size_one() {
  return cudaFuncSetAttribute(attn_decode_mma_kernel<REP, D, KV, QLO, NWK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(dec_mma_smem<REP, D, KV, NWK>()));
}
template <int REP, int D, typename KV, bool QLO>
cudaError_t size_mma() {
  const cudaError_t e = size_one<REP, D, KV, QLO, 2>();
  return e == cudaSuccess ? size_one<REP, D, KV, QLO, 4>() : e;
}
template <int D, typename KV>
cudaError_t size_rep(int rep, bool qlo) {
  return with_rep(rep, [&](auto r) {
    constexpr int R = decltype(r)::value;
    return qlo ? size_mma<R, D, KV, true>() : size_mma<R, D, KV, false>();
  });
}

// ---- decode rows walking whole rows (bf16 cache, one plane, 128+ decode rows) ---------------------
// Why: ncu showed attn_decode_mma_kernel at low occupancy, every block issuing its loads in one
// burst at its start, and the combine kernel a further cost (native/cuda/README.md). Here a block
// of kWalkWarps warps owns one (row, KV head), with no partials: warp w streams the row's 16-key
// chunks w, w + NW, ... through kWalkStages cp.async stages of its own (the next chunk loading
// while one is computed) and keeps an online softmax; the warps merge once at the end and write
// act. S = q·K^T and P·V on tensor cores as in the prefill kernel (the REP heads as the mma's M
// rows, K and V from shared memory). Two stages fit three blocks per SM (three stages: two); 2 or 3
// stages and 2 or 4 warps were measured on the 256-stream workload (native/cuda/README.md), and
// this one won.
constexpr int kWalkChunk = 16;
constexpr int kWalkWarps = 4;
constexpr int kWalkStages = 2;
template <int REP, int D, int NW>
constexpr size_t walk_smem() {
  const size_t stages = size_t(NW) * kWalkStages * 2 * kWalkChunk * (D + 8) * sizeof(bf16);
  const size_t merge = size_t(NW) * REP * D * sizeof(float);
  return stages > merge ? stages : merge;
}

template <int REP, int D, int NW>
__global__ void __launch_bounds__(NW * 32)
    attn_decode_walk_kernel(const float* q, const bf16* kc, const bf16* vc, RowMeta m, int T, int heads, int KVH,
                            int bs, float scale_log2, bool contig, bf16* act) {
  constexpr int LD = D + 8, KS = D / 16, NO = D / 8, PPR = D * 2 / 16;  // PPR: 16-byte pieces per row
  static_assert(REP <= 16 && D % 16 == 0, "REP <= 16 heads in the mma rows");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float wm[NW][16], wl[NW][16];
  if (int(blockIdx.x) >= m.counts[0]) return;
  const int kvh = blockIdx.y, r = m.tile_row[blockIdx.x], ctx = m.pos[r] + 1;
  const int t = threadIdx.x, w = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
  const size_t QD = size_t(heads) * D;
  // This warp's stages: K [kWalkStages][16][LD], then V the same.
  bf16* ks = reinterpret_cast<bf16*>(smem_raw) + size_t(w) * kWalkStages * 2 * kWalkChunk * LD;
  bf16* vs = ks + kWalkStages * kWalkChunk * LD;
  const PagedRows key_off = paged_rows(m.bt + m.bt_off[r], bs, KVH, kvh, D);  // a key's K / V row
  const int nch = (ctx + kWalkChunk - 1) / kWalkChunk;  // the row's chunks; this warp's: w, w + NW, ...
  const auto issue = [&](int i, int stg) {              // the warp's i-th chunk -> stage stg
    const int c = w + i * NW;
    if (c < nch) {
      const int j0 = c * kWalkChunk;
      // contig (block_size a multiple of the chunk): the chunk's keys are consecutive rows of one
      // cache block, so one block-table lookup, then fixed strides.
      const size_t base = contig ? key_off(j0) : 0;
#pragma unroll
      for (int e = lane; e < kWalkChunk * PPR; e += 32) {
        const int j = e / PPR, piece = e % PPR, key = j0 + j;
        bf16* kp = ks + (stg * kWalkChunk + j) * LD + piece * 8;
        bf16* vp = vs + (stg * kWalkChunk + j) * LD + piece * 8;
        if (key < ctx) {
          const size_t off = (contig ? base + size_t(j) * size_t(KVH * D) : key_off(key)) + piece * 8;
          cp_async16(kp, kc + off);
          cp_async16(vp, vc + off);
        } else {  // P is 0 there, and 0 times uninitialised shared memory could be NaN
          *reinterpret_cast<uint4*>(kp) = make_uint4(0, 0, 0, 0);
          *reinterpret_cast<uint4*>(vp) = make_uint4(0, 0, 0, 0);
        }
      }
    }
    cp_async_commit();
  };
#pragma unroll
  for (int i = 0; i < kWalkStages - 1; ++i) issue(i, i);

  // q's A fragments, k-step kk: a0 / a1 = dims 16 kk + 2 tq (+1) of heads g / g + 8, a2 / a3 the
  // same 8 dims further (heads past REP: zero).
  uint32_t qa[KS][4];
#pragma unroll
  for (int kk = 0; kk < KS; ++kk)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int h = g + 8 * i;
      float2 a = make_float2(0, 0), b = a;
      if (h < REP) {
        const float* qp = q + size_t(r) * QD + size_t(kvh * REP + h) * D + 16 * kk + 2 * tq;
        a = *reinterpret_cast<const float2*>(qp);
        b = *reinterpret_cast<const float2*>(qp + 8);
      }
      uint32_t dummy;
      split2<false>(a.x, a.y, qa[kk][i], dummy);
      split2<false>(b.x, b.y, qa[kk][2 + i], dummy);
    }

  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;
  float mrun[2] = {-INFINITY, -INFINITY}, lrun[2] = {0, 0};
  const int mine = nch > w ? (nch - w + NW - 1) / NW : 0;
  for (int i = 0; i < mine; ++i) {
    cp_async_wait<kWalkStages - 2>();  // this lane's pieces of chunk i have landed
    __syncwarp();                      // every lane's have, and chunk i - 1's stage is read by all
    issue(i + kWalkStages - 1, (i + kWalkStages - 1) % kWalkStages);
    const int stg = i % kWalkStages, j0 = (w + i * NW) * kWalkChunk;
    const bf16* kst = ks + stg * kWalkChunk * LD;
    const bf16* vst = vs + stg * kWalkChunk * LD;
    // S in two accumulators per n-tile (even / odd k-steps), summed at the end: four independent
    // mma chains of KS / 2 instead of two of KS (ncu: "wait" stalls were the largest share).
    float s[2][4], s2[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) s[n][c] = s2[n][c] = 0;
    // K's B fragments by ldmatrix, both n-tiles of a k-step in one x4 (ldsm_b_pair; four LDS.32 per
    // lane before).
    const bf16* krow = &kst[ldsm_b_pair(lane, LD)];
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      uint32_t kb[4];
      ldsm_x4(kb, krow + kk * 16);
      mma(kk % 2 ? s2[0] : s[0], qa[kk], kb[0], kb[1]);
      mma(kk % 2 ? s2[1] : s[1], qa[kk], kb[2], kb[3]);
    }
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) s[n][c] += s2[n][c];
    // Online softmax (log2 domain) for rows g (ii = 0) and g + 8 (ii = 1); s becomes P. O is
    // rescaled only when some row's maximum moved (after the first chunks it rarely does).
    float corr2[2];
#pragma unroll
    for (int ii = 0; ii < 2; ++ii) {
      const auto keep = [&](int n, int c) { return j0 + n * 8 + 2 * tq + c < ctx; };
      corr2[ii] = online_softmax(s, ii, scale_log2, keep, mrun[ii], lrun[ii]);
    }
    if (__any_sync(kFull, corr2[0] != 1.0f || corr2[1] != 1.0f))
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        o[n][0] *= corr2[0];
        o[n][1] *= corr2[0];
        o[n][2] *= corr2[1];
        o[n][3] *= corr2[1];
      }
    // O += P · V: the chunk's 16 keys are one k-step; S's accumulators are P's A fragment.
    uint32_t ph[4], unused;
    split2<false>(s[0][0], s[0][1], ph[0], unused);
    split2<false>(s[0][2], s[0][3], ph[1], unused);
    split2<false>(s[1][0], s[1][1], ph[2], unused);
    split2<false>(s[1][2], s[1][3], ph[3], unused);
    const bf16* vrow = &vst[ldsm_rows16(lane, LD)];
#pragma unroll
    for (int n = 0; n < NO; n += 2) {  // two n-tiles per ldmatrix
      uint32_t vb[4];
      ldsm_x4_trans(vb, vrow + n * 8);
      mma(o[n], ph, vb[0], vb[1]);
      mma(o[n + 1], ph, vb[2], vb[3]);
    }
  }

  // Merge the warps (fixed order) and write act.
  cp_async_wait<0>();  // only empty groups are left; the stages become the merge buffer
  __syncthreads();
  merge_warps<REP, D, NW>(w, g, tq, mrun, lrun, o, wm, wl, reinterpret_cast<float*>(smem_raw),  // warp 0: key 0
                          [&](int h, int d, float, float L, float O) {
                            store_act(O / L, act, size_t(r) * QD + size_t(kvh * REP + h) * D + d, size_t(T) * QD, 1);
                          });
}

template <int REP, int D>
void launch_walk(dim3 grid, const float* q, const bf16* kc, const bf16* vc, RowMeta m, int T, int heads, int KVH,
                 int bs, float scale, bf16* act, cudaStream_t s) {
  // A chunk's keys from one block-table lookup when blocks hold whole chunks: faster than a lookup
  // per key (native/cuda/README.md).
  launch(attn_decode_walk_kernel<REP, D, kWalkWarps>, grid, kWalkWarps * 32, walk_smem<REP, D, kWalkWarps>(), s, q, kc,
         vc, m, T, heads, KVH, bs, scale * 1.4426950408889634f, bs % kWalkChunk == 0, act);
}
template <int REP, int D>
cudaError_t size_walk() {
  return cudaFuncSetAttribute(attn_decode_walk_kernel<REP, D, kWalkWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(walk_smem<REP, D, kWalkWarps>()));
}

}  // namespace

cudaError_t attention_prepare(int heads, int kv_heads, int D, bool kv_bf16, int planes) {
  const int rep = heads / kv_heads;
  const bool qlo = planes == 2;
  if (kv_bf16 && !qlo) {  // the walk kernel's shared memory
    const cudaError_t e = with_rep(rep, [&](auto r) {
      constexpr int R = decltype(r)::value;
      return D == 128 ? size_walk<R, 128>() : size_walk<R, 64>();
    });
    if (e != cudaSuccess) return e;
  }
  if (D == 128) return kv_bf16 ? size_rep<128, bf16>(rep, qlo) : size_rep<128, float>(rep, qlo);
  return kv_bf16 ? size_rep<64, bf16>(rep, qlo) : size_rep<64, float>(rep, qlo);
}

bool attention_supported(int heads, int kv_heads, int D) {
  const int rep = heads / kv_heads;
  return (D == 64 || D == 128) && (rep == 1 || rep == 2 || rep == 4 || rep == 8 || rep == 16) && heads % kv_heads == 0;
}

void attention(const float* q, const void* k_cache, const void* v_cache, bool kv_bf16, RowMeta m, int T, int tiles,
               int heads, int kv_heads, int D, int block_size, int part_keys, int num_parts, int planes,
               float* part_acc, float* part_ml, bf16* act, cudaStream_t s) {
  if (part_keys > kMaxPartKeys) {  // whole rows (attn_decode_part_keys with walk): bf16 cache, one plane
    const dim3 grid(tiles, kv_heads);
    const float scale = 1.0f / sqrtf(float(D));
    const auto* kc = static_cast<const bf16*>(k_cache);
    const auto* vc = static_cast<const bf16*>(v_cache);
    with_rep(heads / kv_heads, [&](auto r) {
      constexpr int R = decltype(r)::value;
      if (D == 128) launch_walk<R, 128>(grid, q, kc, vc, m, T, heads, kv_heads, block_size, scale, act, s);
      else launch_walk<R, 64>(grid, q, kc, vc, m, T, heads, kv_heads, block_size, scale, act, s);
    });
    return;
  }
  if (kv_bf16)
    attention_t<bf16>(q, static_cast<const bf16*>(k_cache), static_cast<const bf16*>(v_cache), m, T, tiles, heads,
                      kv_heads, D, block_size, part_keys, num_parts, planes, part_acc, part_ml, act, s);
  else
    attention_t<float>(q, static_cast<const float*>(k_cache), static_cast<const float*>(v_cache), m, T, tiles, heads,
                       kv_heads, D, block_size, part_keys, num_parts, planes, part_acc, part_ml, act, s);
  if (num_parts > 1)
    launch(attn_combine_kernel, dim3(tiles, heads), D, 0, s, part_acc, part_ml, m, T, heads, kv_heads, D, part_keys,
           num_parts, planes, act);
}

}  // namespace eec
