// Decode attention: one query row (REP query heads per KV head) against its paged keys, split into
// key partitions (flash-decoding) that a combine kernel merges. fp32 arithmetic on CUDA cores: the
// work per key is small (REP dot products of D), the cost is reading K and V, so the kernel is laid
// out for memory-level parallelism rather than for FLOPs.
// Block: NWK = P / 32 warps over keys for a partition of P keys (P = part_keys: 32, 64 or 128) and
// NWH warps over groups of query heads; warp (wk, wh) takes keys k0 + 32 wk .. +31 for REP / NWH
// heads, so no warp loops over chunks and no block barrier sits between a load and its use:
// - scores: one key per lane, its REP dot products against q read from shared memory as broadcasts
//   (K rows read 32 dims at a time in 16-byte loads, all in flight);
// - the chunk's softmax across lanes (max, exp, sum per head);
// - P·V with lanes over dims (D/32 each): V rows read coalesced 8 at a time, p from shared memory;
// - the warps' (max, sum, acc) merged in warp order through shared memory.
// NOTE: this replaced tiles of 4 warps x 4 query vectors that staged each 32-key chunk through
// shared memory between two barriers: measured on the H200 at 256 rows of 384 keys, 161 us per
// layer (12.5% occupancy, latency-bound), ~75% of a 256-row decode step.
#include "device.cuh"
#include "kernels.cuh"

#include <algorithm>

namespace eec {

namespace {

constexpr int kWarpKeys = 32;
constexpr int kBatch = 8;  // V rows in flight per lane
constexpr int kTargetBlocks = 2048;

// Dims [lane * DL, lane * DL + DL) of one cache row as floats.
template <int DL>
__device__ __forceinline__ void load_dims(const float* p, float* out) {
  if constexpr (DL == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else {
    const float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x, out[1] = v.y;
  }
}
template <int DL>
__device__ __forceinline__ void load_dims(const bf16* p, float* out) {
  if constexpr (DL == 4) {
    const float4 v = load4(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else {
    const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
    out[0] = v.x, out[1] = v.y;
  }
}

// Few rows (P = 32): tiles of 4 warps x 4 query vectors (REP used), each 32-key chunk staged
// through shared memory (K [32][D + 4], V [32][D]), lane j scoring key j against its warp's
// queries. Measured on the H200 at one row: 1,220 tok/s single stream against 956 for
// attn_decode_kernel with 4 warps over head groups (whose lanes each walk a whole key row).
constexpr int kChunk = 32;

// 16 bytes of a cache row as floats: 4 fp32 or 8 bf16 elements.
__device__ __forceinline__ void load16(const float* p, float* out) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void load16(const bf16* p, float* out) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]));
    out[2 * i] = f.x, out[2 * i + 1] = f.y;
  }
}

template <int REP, int D, typename KV, int NW, int QPW>
__global__ void __launch_bounds__(NW * 32) attn_tile_kernel(const float* q, const KV* kc, const KV* vc, RowMeta m, int T,
                                                         int tile_off, int heads, int KVH, int bs, int P, int NP, float scale,
                                                         int planes, float* part_acc, float* part_ml, bf16* act) {
  constexpr int NQ = NW * QPW;  // query vectors per tile
  constexpr int NT = NW * 32;   // threads
  constexpr int DL = D / 32;    // output dims per lane
  static_assert(NQ % REP == 0, "a tile holds whole rows");
  const int tile = tile_off + blockIdx.x, g = blockIdx.y, p = blockIdx.z;
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

// NWK warps over key chunks x NWH warps over groups of REP / NWH query heads (see attention_t).
template <int REP, int D, typename KV, int NWK, int NWH>
__global__ void __launch_bounds__(NWK * NWH * 32, 16 / (NWK * NWH))  // <= 128 registers: 16 warps per SM
    attn_decode_kernel(const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int bs, int NP,
                       float scale, int planes, float* part_acc, float* part_ml, bf16* act) {
  constexpr int P = NWK * kWarpKeys;  // keys per partition
  constexpr int HW = REP / NWH;       // query heads per warp
  constexpr int NT = NWK * NWH * 32;
  constexpr int DL = D / 32;
  static_assert(D % 32 == 0 && REP % NWH == 0, "whole K batches and head groups");
  const int g = blockIdx.y;
  const int r = m.tile_row[blockIdx.x];
  const int ctx = m.pos[r] + 1;
  if (int(blockIdx.z) * P >= ctx) return;
  __shared__ __align__(16) float qs[REP][D];
  __shared__ float wm[NWK][REP], wl[NWK][REP];
  // Scratch shared by each warp's p[h][key] (softmax -> P·V) and, after a barrier, the warps'
  // accumulators for the merge (wacc[NWK][REP][D]); one buffer keeps REP = 16 under 48 KB.
  constexpr int kPs = NWK * NWH * HW * kWarpKeys, kAcc = NWK > 1 ? NWK * REP * D : 0;
  __shared__ __align__(16) float scratch[kPs > kAcc ? kPs : kAcc];
  float(*const wacc)[REP][D] = reinterpret_cast<float(*)[REP][D]>(scratch);
  float(*const ps)[HW][kWarpKeys] = reinterpret_cast<float(*)[HW][kWarpKeys]>(scratch);
  const int t = threadIdx.x, w = t / 32, lane = t % 32, wk = w % NWK, h0 = (w / NWK) * HW;
  const size_t QD = size_t(heads) * D;
  for (int e = t; e < REP * D / 4; e += NT) {
    const int h = e / (D / 4), d = 4 * (e % (D / 4));
    *reinterpret_cast<float4*>(&qs[h][d]) =
        *reinterpret_cast<const float4*>(q + size_t(r) * QD + size_t(g * REP + h) * D + d);
  }
  __syncthreads();
  const int32_t* bt = m.bt + m.bt_off[r];
  const int bmask = bs - 1, bshift = __ffs(bs) - 1;
  const bool pow2 = (bs & bmask) == 0;  // the usual block sizes: a shift, not an integer division
  const auto row_of = [&](const KV* cache, int key) {
    int b, o;
    if (pow2) {
      b = key >> bshift;
      o = key & bmask;
    } else {
      b = key / bs;
      o = key - b * bs;
    }
    return cache + ((size_t(bt[b]) * bs + o) * KVH + g) * D;
  };

  // Partitions blockIdx.z, + gridDim.z, ... (fewer blocks than partitions when rows are many).
  for (int p = blockIdx.z; p * P < ctx; p += gridDim.z) {
    const int j0 = p * P + kWarpKeys * wk;  // this warp's first key
    const int n = max(0, min(kWarpKeys, ctx - j0));

    // Scores of this lane's key (lanes past n load the last key and are masked).
    float s[HW];
#pragma unroll
    for (int h = 0; h < HW; ++h) s[h] = 0;
    if (n > 0) {
      const KV* kp = row_of(kc, j0 + min(lane, n - 1));
      constexpr int EPL = 16 / sizeof(KV), LB = 32 / EPL;  // 16-byte loads: 32 dims in flight per lane
#pragma unroll
      for (int d0 = 0; d0 < D; d0 += 32) {
        float kv[LB][EPL];
#pragma unroll
        for (int i = 0; i < LB; ++i) load16(kp + d0 + EPL * i, kv[i]);
#pragma unroll
        for (int i = 0; i < LB; ++i)
#pragma unroll
          for (int c = 0; c < EPL; c += 4)
#pragma unroll
            for (int h = 0; h < HW; ++h) {
              const float4 q4 = *reinterpret_cast<const float4*>(&qs[h0 + h][d0 + EPL * i + c]);
              s[h] = fmaf(q4.x, kv[i][c], s[h]);
              s[h] = fmaf(q4.y, kv[i][c + 1], s[h]);
              s[h] = fmaf(q4.z, kv[i][c + 2], s[h]);
              s[h] = fmaf(q4.w, kv[i][c + 3], s[h]);
            }
      }
    }
    float mw[HW], lw[HW];
    float(*pw)[kWarpKeys] = ps[w];  // this warp's p[h][key], read back 4 keys at a time
#pragma unroll
    for (int h = 0; h < HW; ++h) {
      const float sc = lane < n ? s[h] * scale : -INFINITY;
      mw[h] = warp_max(sc);  // -inf for a warp past the context
      const float pr = lane < n ? expf(sc - mw[h]) : 0.0f;
      lw[h] = warp_sum(pr);
      pw[h][lane] = pr;
    }
    __syncwarp();

    // acc[h][d] = sum_j p[h][j] * V[j][lane * DL + d].
    float acc[HW][DL];
#pragma unroll
    for (int h = 0; h < HW; ++h)
#pragma unroll
      for (int d = 0; d < DL; ++d) acc[h][d] = 0;
    for (int jb = 0; jb < n; jb += kBatch) {  // n is warp-uniform: every lane takes part in the shuffles
      float v[kBatch][DL];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (jb + i < n)
          load_dims<DL>(row_of(vc, j0 + jb + i) + lane * DL, v[i]);
        else
#pragma unroll
          for (int d = 0; d < DL; ++d) v[i][d] = 0;
      }
#pragma unroll
      for (int i4 = 0; i4 < kBatch; i4 += 4)
#pragma unroll
        for (int h = 0; h < HW; ++h) {
          const float4 p4 = *reinterpret_cast<const float4*>(&pw[h][jb + i4]);  // a broadcast
          const float pj[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int d = 0; d < DL; ++d) acc[h][d] = fmaf(pj[i], v[i4 + i][d], acc[h][d]);
        }
    }
    __syncwarp();  // pw is rewritten by the next partition (NWK == 1) or becomes wacc (after a barrier)

    // Head h's (max M, sum L, acc O) -> act directly, or a partial for the combine kernel.
    const auto emit = [&](int h, int d, float M, float L, float O) {
      if (NP == 1) {
        store_act(O / L, act, size_t(r) * QD + size_t(g * REP + h) * D + d, size_t(T) * QD, planes);
      } else {
        const size_t base = ((size_t(blockIdx.x) * KVH + g) * NP + p) * REP + h;
        part_acc[base * D + d] = O;
        if (d == 0) {
          part_ml[base * 2] = M;
          part_ml[base * 2 + 1] = L;
        }
      }
    };
    if (NWK == 1) {
#pragma unroll
      for (int h = 0; h < HW; ++h)
#pragma unroll
        for (int d = 0; d < DL; ++d) emit(h0 + h, lane * DL + d, mw[h], lw[h], acc[h][d]);
      continue;
    }
    __syncthreads();  // every warp is done with its p (the scratch becomes wacc)
#pragma unroll
    for (int h = 0; h < HW; ++h) {
      if (lane == 0) {
        wm[wk][h0 + h] = mw[h];
        wl[wk][h0 + h] = lw[h];
      }
#pragma unroll
      for (int d = 0; d < DL; ++d) wacc[wk][h0 + h][lane * DL + d] = acc[h][d];
    }
    __syncthreads();
    for (int e = t; e < REP * D; e += NT) {  // the partition's first warp holds a key: M is finite
      const int h = e / D, d = e % D;
      float M = -INFINITY;
#pragma unroll
      for (int i = 0; i < NWK; ++i) M = fmaxf(M, wm[i][h]);
      float L = 0, O = 0;
#pragma unroll
      for (int i = 0; i < NWK; ++i) {
        const float f = wm[i][h] == -INFINITY ? 0.0f : expf(wm[i][h] - M);
        L += wl[i][h] * f;
        O += wacc[i][h][d] * f;
      }
      emit(h, d, M, L, O);
    }
    __syncthreads();  // wm / wacc are reused by the next partition
  }
}

__global__ void attn_combine_kernel(const float* part_acc, const float* part_ml, RowMeta m, int T, int heads, int KVH,
                                    int D, int P, int NP, int planes, bf16* act) {
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

// Warps per block by partition size: NWK = P / 32 over keys, and over query heads as many as keep
// the block at 4 warps; P = 32 (few rows) takes attn_tile_kernel.
template <int REP, int D, typename KV>
void launch_nw(int nwk, dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH,
               int bs, int NP, float scale, int planes, float* pa, float* pm, bf16* act, cudaStream_t s) {
#define EEC_NW(K, H)                                                                                               \
  attn_decode_kernel<REP, D, KV, K, H><<<grid, K * H * 32, 0, s>>>(q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, \
                                                                  pa, pm, act)
  constexpr int h2 = REP < 2 ? REP : 2;
  if (nwk == 1)
    attn_tile_kernel<REP, D, KV, 4, 4><<<dim3(grid.x, grid.y, NP), 128, 0, s>>>(q, kc, vc, m, T, 0, heads, KVH, bs,
                                                                              kWarpKeys, NP, scale, planes, pa, pm, act);
  else if (nwk == 2)
    EEC_NW(2, h2);
  else
    EEC_NW(4, 1);
#undef EEC_NW
}

template <int D, typename KV>
void launch_rep(int rep, int nw, dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads,
                int KVH, int bs, int NP, float scale, int planes, float* pa, float* pm, bf16* act, cudaStream_t s) {
  switch (rep) {
#define EEC_REP(R)                                                                                  \
  case R:                                                                                           \
    launch_nw<R, D, KV>(nw, grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, pa, pm, act, s); \
    break;
    EEC_REP(1)
    EEC_REP(2)
    EEC_REP(4)
    EEC_REP(8)
    EEC_REP(16)
#undef EEC_REP
  }
}

template <typename KV>
void attention_t(const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int tiles, int heads, int KVH, int D,
                 int bs, int P, int NP, int planes, float* pa, float* pm, bf16* act, cudaStream_t s) {
  // Graphs are captured for max_model_len, so NP counts partitions no row may have: rather than a
  // block per partition (most exiting at once: measured 14k empty blocks, ~1/3 of the kernel's time
  // at 256 rows), ~2k blocks loop over partitions z, z + gridDim.z, ...
  const int z = std::max(1, std::min(NP, (kTargetBlocks + tiles * KVH - 1) / (tiles * KVH)));
  const dim3 grid(tiles, KVH, z);
  const float scale = 1.0f / sqrtf(float(D));
  const int rep = heads / KVH, nw = P / kWarpKeys;
  if (D == 128)
    launch_rep<128, KV>(rep, nw, grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, pa, pm, act, s);
  else
    launch_rep<64, KV>(rep, nw, grid, q, kc, vc, m, T, heads, KVH, bs, NP, scale, planes, pa, pm, act, s);
}

}  // namespace

bool attention_supported(int heads, int kv_heads, int D) {
  const int rep = heads / kv_heads;
  return (D == 64 || D == 128) && (rep == 1 || rep == 2 || rep == 4 || rep == 8 || rep == 16) &&
         heads % kv_heads == 0;
}

void attention(const float* q, const void* k_cache, const void* v_cache, bool kv_bf16, RowMeta m, int T, int tiles,
               int heads, int kv_heads, int D, int block_size, int part_keys, int num_parts, int planes, float* part_acc,
               float* part_ml, bf16* act, cudaStream_t s) {
  if (kv_bf16)
    attention_t<bf16>(q, static_cast<const bf16*>(k_cache), static_cast<const bf16*>(v_cache), m, T, tiles, heads,
                      kv_heads, D, block_size, part_keys, num_parts, planes, part_acc, part_ml, act, s);
  else
    attention_t<float>(q, static_cast<const float*>(k_cache), static_cast<const float*>(v_cache), m, T, tiles, heads,
                       kv_heads, D, block_size, part_keys, num_parts, planes, part_acc, part_ml, act, s);
  if (num_parts > 1)
    attn_combine_kernel<<<dim3(tiles, heads), D, 0, s>>>(part_acc, part_ml, m, T, heads, kv_heads, D, part_keys,
                                                         num_parts, planes, act);
}

}  // namespace eec
