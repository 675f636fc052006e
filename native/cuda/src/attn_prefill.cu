// Prefill attention on tensor cores: flash-attention-2 style tiles over the paged KV cache with
// mma.sync m16n8k16 (bf16 in, fp32 accumulate).
// Why our own kernel and not FlashAttention / FlashInfer: those are PyTorch extensions with their
// own paged layouts and build systems; this reads the engine's block tables and the cache layout
// of rope_kv as they are, and keeps the "precise" mode fp32-grade (below), which they do not offer.
// Before it, CUDA-core tiles of 16 query vectors took a large share of every mixed step
// (native/cuda/README.md).
//
// Block: kGroups groups of 4 warps; a group's warps x 16 query vectors = 64 query vectors of one KV
// head = 64 / REP consecutive rows of one sequence (their REP query heads share every K/V chunk).
// q sits in shared memory as bf16 planes; keys go through shared memory kGroups x 32 at a time,
// group j taking keys [32j, 32j + 32) of each chunk; each warp keeps S (16 x 32), the online
// softmax (running max and sum per query vector, in the log2 domain) and O (16 x D) in registers,
// laid out as the mma's fragments; at the end the groups' partial softmaxes are merged through
// shared memory in a fixed order. Why groups: a tile's time is a serial chain of chunks (the
// longest prompt's last tile sets the kernel's time when a step prefills a few prompts), and two
// groups halve it (the figures: native/cuda/README.md).
// Precision: with two activation planes ("precise", --dtype float32) q and P are split into hi and
// lo bf16 halves, and an fp32 cache's K and V likewise; each product takes the three mmas hi·hi +
// lo·hi + hi·lo (the bf16x3 scheme: ~16 mantissa bits per operand, fp32-grade results). With one
// plane and a bf16 cache it is one mma per product, the precision of bf16 serving engines.
#include "device.cuh"
#include "kernels.cuh"
#include "launch.cuh"
#include "mma.cuh"

namespace eec {

namespace {

constexpr int kQWarps = 4;  // warps of a group (each 16 query vectors: the mma's M)
constexpr int kGroups = 2;  // key-splitting groups
constexpr int kWarps = kQWarps * kGroups;
constexpr int kTileQ = kQWarps * 16;         // query vectors per block
constexpr int kGroupKeys = 32;               // keys per group per chunk
constexpr int kKeys = kGroups * kGroupKeys;  // keys per shared-memory chunk

// Shared memory (dynamic, bf16, rows of D + 8: an odd number of 16-byte units, so fragment loads
// are conflict-free): q [QP][kTileQ][LD], then K and V [KP][kKeys][LD] each (P = 2 with lo halves);
// at the end the K/V space holds a group's partial O [kTileQ][D] and (max, sum) [kTileQ] as floats.
// ST > 0 (a bf16 cache): ST stages of K and V, filled by cp.async.
template <int D, bool QLO, bool KVLO, int ST>
constexpr size_t prefill_smem_bytes() {
  const size_t q = size_t((QLO ? 2 : 1) * kTileQ) * (D + 8) * sizeof(bf16);
  const size_t kv = size_t(2 * (KVLO ? 2 : 1) * (ST > 0 ? ST : 1) * kKeys) * (D + 8) * sizeof(bf16);
  const size_t merge = size_t(kTileQ) * (D + 2) * sizeof(float);
  return q + (kv > merge ? kv : merge);
}

// QLO: q and P carry lo halves (two activation planes). KVLO: K and V do (fp32 cache).
// How K and V reach shared memory:
// - ST = 0 (any cache): the next chunk is loaded into registers while the current one is computed
//   and converted to bf16 planes on the way in (without the prefetch the loop was bound by
//   global-load latency).
// - ST > 0 (bf16 cache only: no conversion needed): ST shared-memory stages filled by cp.async,
//   ST - 1 chunks in flight while one is computed, and no registers held for them. Why: ncu showed
//   the register version at one block per SM, few active warps per scheduler, stalled much of its
//   time on the chunk's global loads (native/cuda/README.md).
template <int D, typename KV, bool QLO, bool KVLO, int ST>
__global__ void __launch_bounds__(kWarps * 32, 1)  // (x, 1): one block per SM (see launch_v)
    attn_prefill_kernel(const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int rep,
                        int bs, float scale_log2, bf16* act) {
  static_assert(ST == 0 || (!KVLO && sizeof(KV) == 2), "cp.async stages hold a bf16 cache as it is");
  constexpr int KS = D / 16;  // mma k-steps over the head dim (S = q·K^T)
  constexpr int NO = D / 8;   // output n-tiles (O = P·V)
  constexpr int NS = kGroupKeys / 8;
  constexpr int LD = D + 8;
  constexpr int QP = QLO ? 2 : 1, KP = KVLO ? 2 : 1;
  constexpr int NT = kWarps * 32;
  constexpr int E = kKeys * D / 4 / NT;  // 4-element groups of K (and of V) per thread per chunk
  static_assert(kKeys * D / 4 % NT == 0, "whole groups per thread");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* qs = reinterpret_cast<bf16*>(smem_raw);  // [QP][kTileQ][LD]
  constexpr int NSTG = ST > 0 ? ST : 1;
  bf16* ks = qs + QP * kTileQ * LD;        // [NSTG][KP][kKeys][LD]
  bf16* vs = ks + NSTG * KP * kKeys * LD;  // [NSTG][KP][kKeys][LD]
  if (int(blockIdx.x) >= m.counts[1]) return;
  const int tile = m.counts[0] + blockIdx.x, kvh = blockIdx.y;  // prefill tiles follow the decode tiles
  const int r0 = m.tile_row[tile], nr = m.tile_n[tile];
  const int t = threadIdx.x, lane = t % 32, g = lane / 4, tq = lane % 4;
  const int grp = t / (32 * kQWarps), w = (t / 32) % kQWarps;  // key group; warp (16 query vectors) in it
  const int kb = grp * kGroupKeys;                             // the group's keys in each chunk
  const size_t QD = size_t(heads) * D;
  const int ctx = m.pos[r0 + nr - 1] + 1;  // the tile's last row sees the most keys
  // A key's K / V row in the cache.
  const PagedRows key_off = paged_rows(m.bt + m.bt_off[r0], bs, KVH, kvh, D);
  // ST > 0: chunk j0's K and V -> stage stg (keys past ctx zero-filled: their P is 0, and 0 times
  // uninitialised shared memory could be NaN); one commit group per chunk, empty past the end.
  const auto issue = [&](int j0, int stg) {
    if (j0 < ctx) {
      constexpr int PPR = D * 2 / 16;  // 16-byte pieces per row
      bf16* kd = ks + stg * kKeys * LD;
      bf16* vd = vs + stg * kKeys * LD;
#pragma unroll
      for (int c = t; c < kKeys * PPR; c += NT) {
        const int j = c / PPR, piece = c % PPR, key = j0 + j;
        bf16* kp = kd + j * LD + piece * 8;
        bf16* vp = vd + j * LD + piece * 8;
        if (key < ctx) {
          const size_t off = key_off(key) + piece * 8;
          cp_async16(kp, kc + off);
          cp_async16(vp, vc + off);
        } else {
          *reinterpret_cast<uint4*>(kp) = make_uint4(0, 0, 0, 0);
          *reinterpret_cast<uint4*>(vp) = make_uint4(0, 0, 0, 0);
        }
      }
    }
    cp_async_commit();
  };

  float4 kr[E], vr[E];  // ST = 0: the chunk in flight (fetch / stash are not called with ST > 0)
  auto fetch = [&](int j0) {
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const int e = t + i * NT, j = e / (D / 4), d = 4 * (e % (D / 4)), key = j0 + j;
      kr[i] = vr[i] = make_float4(0, 0, 0, 0);
      if (key < ctx) {
        const size_t off = key_off(key) + d;
        kr[i] = load4(kc + off);
        vr[i] = load4(vc + off);
      }
    }
  };
  auto stash = [&] {
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const int e = t + i * NT, j = e / (D / 4), d = 4 * (e % (D / 4));
      uint2 kh, kl, vh, vl;
      split2<KVLO>(kr[i].x, kr[i].y, kh.x, kl.x);
      split2<KVLO>(kr[i].z, kr[i].w, kh.y, kl.y);
      split2<KVLO>(vr[i].x, vr[i].y, vh.x, vl.x);
      split2<KVLO>(vr[i].z, vr[i].w, vh.y, vl.y);
      *reinterpret_cast<uint2*>(&ks[j * LD + d]) = kh;
      *reinterpret_cast<uint2*>(&vs[j * LD + d]) = vh;
      if (KVLO) {
        *reinterpret_cast<uint2*>(&ks[(kKeys + j) * LD + d]) = kl;
        *reinterpret_cast<uint2*>(&vs[(kKeys + j) * LD + d]) = vl;
      }
    }
  };
  if constexpr (ST > 0) {
#pragma unroll
    for (int i = 0; i < ST - 1; ++i) issue(i * kKeys, i);
  } else {
    fetch(0);
  }

  const int rshift = __ffs(rep) - 1;  // rep is a power of two (attention_supported)
  // q tile -> shared memory as bf16 planes: query vector qi = row qi / rep, head qi % rep.
  for (int e = t; e < kTileQ * D / 2; e += NT) {
    const int qi = e / (D / 2), d = 2 * (e % (D / 2)), row = qi >> rshift, h = qi & (rep - 1);
    float2 v = make_float2(0, 0);
    if (row < nr) v = *reinterpret_cast<const float2*>(q + size_t(r0 + row) * QD + size_t(kvh * rep + h) * D + d);
    uint32_t hi, lo;
    split2<QLO>(v.x, v.y, hi, lo);
    *reinterpret_cast<uint32_t*>(&qs[qi * LD + d]) = hi;
    if (QLO) *reinterpret_cast<uint32_t*>(&qs[(kTileQ + qi) * LD + d]) = lo;
  }
  // This thread's two query vectors: rows g and g + 8 of its warp's 16 (-1: past the tile).
  int qpos[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = (w * 16 + g + 8 * i) / rep;
    qpos[i] = row < nr ? m.pos[r0 + row] : -1;
  }
  // Where this lane's ldmatrix rows start in the warp's 16 q rows (an A fragment: ldsm_rows16).
  const bf16* qrow = &qs[w * 16 * LD + ldsm_rows16(lane, LD)];

  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;
  float mrun[2] = {-INFINITY, -INFINITY}, lrun[2] = {0, 0};

  for (int j0 = 0, c = 0; j0 < ctx; j0 += kKeys, ++c) {
    int stg = 0;  // the stage holding this chunk
    if constexpr (ST > 0) {
      cp_async_wait<ST - 2>();  // this thread's pieces of chunk c have landed
      __syncthreads();          // everyone's have, and chunk c - 1 is consumed (q is written)
      issue(j0 + (ST - 1) * kKeys, (c + ST - 1) % ST);
      stg = c % ST;
    } else {
      __syncthreads();  // the previous chunk is consumed (and, the first time, q is written)
      stash();
      __syncthreads();
      if (j0 + kKeys < ctx) fetch(j0 + kKeys);
    }
    const bf16* kst = ks + stg * KP * kKeys * LD;
    const bf16* vst = vs + stg * KP * kKeys * LD;

    // S = q · K^T over this chunk: the warp's 16 query vectors x 32 keys.
    float s[NS][4];
#pragma unroll
    for (int n = 0; n < NS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0;
    // K's B fragments by ldmatrix.x4, two n-tiles at a time (ldsm_b_pair). Each accumulator takes
    // its products in the same order as with one n-tile at a time.
    const bf16* krow = &kst[kb * LD + ldsm_b_pair(lane, LD)];
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      uint32_t qh[4], ql[4];
      ldsm_x4(qh, qrow + kk * 16);
      if (QLO) ldsm_x4(ql, qrow + kTileQ * LD + kk * 16);
#pragma unroll
      for (int n = 0; n < NS; n += 2) {
        uint32_t kf[4];
        ldsm_x4(kf, krow + n * 8 * LD + kk * 16);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          mma(s[n + h], qh, kf[2 * h], kf[2 * h + 1]);
          if (QLO) mma(s[n + h], ql, kf[2 * h], kf[2 * h + 1]);
        }
        if (KVLO) {
          ldsm_x4(kf, krow + n * 8 * LD + kKeys * LD + kk * 16);
          mma(s[n], qh, kf[0], kf[1]);
          mma(s[n + 1], qh, kf[2], kf[3]);
        }
      }
    }

    // Causal mask and online softmax; s becomes P (unnormalised), o is rescaled.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const auto keep = [&](int n, int c) { return j0 + kb + n * 8 + 2 * tq + c <= qpos[i]; };
      const float corr = online_softmax(s, i, scale_log2, keep, mrun[i], lrun[i]);
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        o[n][2 * i] *= corr;
        o[n][2 * i + 1] *= corr;
      }
    }

    // O += P · V: S's accumulator layout is the A fragment's, 16 keys (two n-tiles) per k-step.
#pragma unroll
    for (int kc16 = 0; kc16 < kGroupKeys / 16; ++kc16) {
      uint32_t ph[4], pl[4];
      split2<QLO>(s[2 * kc16][0], s[2 * kc16][1], ph[0], pl[0]);
      split2<QLO>(s[2 * kc16][2], s[2 * kc16][3], ph[1], pl[1]);
      split2<QLO>(s[2 * kc16 + 1][0], s[2 * kc16 + 1][1], ph[2], pl[2]);
      split2<QLO>(s[2 * kc16 + 1][2], s[2 * kc16 + 1][3], ph[3], pl[3]);
      const bf16* vrow = &vst[(kb + kc16 * 16) * LD + ldsm_rows16(lane, LD)];
#pragma unroll
      for (int n = 0; n < NO; n += 2) {  // two n-tiles per ldmatrix (ldsm_x4_trans)
        uint32_t vf[4];
        ldsm_x4_trans(vf, vrow + n * 8);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          mma(o[n + h], ph, vf[2 * h], vf[2 * h + 1]);
          if (QLO) mma(o[n + h], pl, vf[2 * h], vf[2 * h + 1]);
        }
        if (KVLO) {
          ldsm_x4_trans(vf, vrow + kKeys * LD + n * 8);
          mma(o[n], ph, vf[0], vf[1]);
          mma(o[n + 1], ph, vf[2], vf[3]);
        }
      }
    }
  }

  if constexpr (ST > 0) cp_async_wait<0>();  // (only empty groups are left) before ks is reused
  // Merge the groups' partial softmaxes into group 0, groups 1, 2, ... in turn (a fixed order).
  float* mo = reinterpret_cast<float*>(ks);  // [kTileQ][D] partial O, then [kTileQ][2] (max, sum)
  float* mml = mo + kTileQ * D;
  for (int from = 1; from < kGroups; ++from) {
    __syncthreads();  // the K/V space is free (first time) / the previous group was merged
    if (grp == from)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int qi = w * 16 + g + 8 * i;
#pragma unroll
        for (int n = 0; n < NO; ++n)
          *reinterpret_cast<float2*>(&mo[qi * D + n * 8 + 2 * tq]) = make_float2(o[n][2 * i], o[n][2 * i + 1]);
        if (tq == 0) *reinterpret_cast<float2*>(&mml[2 * qi]) = make_float2(mrun[i], lrun[i]);
      }
    __syncthreads();
    if (grp == 0)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int qi = w * 16 + g + 8 * i;
        const float2 ml = *reinterpret_cast<const float2*>(&mml[2 * qi]);
        const float M = fmaxf(mrun[i], ml.x);
        const float fa = mrun[i] == -INFINITY ? 0.0f : exp2f(mrun[i] - M);
        const float fb = ml.x == -INFINITY ? 0.0f : exp2f(ml.x - M);
        lrun[i] = lrun[i] * fa + ml.y * fb;
        mrun[i] = M;
#pragma unroll
        for (int n = 0; n < NO; ++n) {
          const float2 ob = *reinterpret_cast<const float2*>(&mo[qi * D + n * 8 + 2 * tq]);
          o[n][2 * i] = o[n][2 * i] * fa + ob.x * fb;
          o[n][2 * i + 1] = o[n][2 * i + 1] * fa + ob.y * fb;
        }
      }
  }
  if (grp != 0) return;

  const int planes = QLO ? 2 : 1;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (qpos[i] < 0) continue;
    const int qi = w * 16 + g + 8 * i;
    const size_t base = size_t(r0 + qi / rep) * QD + size_t(kvh * rep + qi % rep) * D;
    const float inv = 1.0f / lrun[i];
#pragma unroll
    for (int n = 0; n < NO; ++n)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        store_act(o[n][2 * i + c] * inv, act, base + n * 8 + 2 * tq + c, size_t(T) * QD, planes);
  }
}

// A bf16 cache goes through 3 cp.async stages (ST = 3, one block per SM, far fewer registers than
// through registers); an fp32 cache through registers (ST = 0). Two stages fit two blocks per SM:
// better for many prompts in one step, worse for one, and serving steps prefill a few prompts at a
// time, so three stages it is (the ncu figures: native/cuda/README.md).
template <int D, typename KV, bool QLO, int ST>
void launch_v(dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int rep,
              int bs, float sl, bf16* act, cudaStream_t s) {
  constexpr bool kvlo = sizeof(KV) == 4;
  constexpr size_t bytes = prefill_smem_bytes<D, QLO, kvlo, ST>();
  auto* kernel = attn_prefill_kernel<D, KV, QLO, kvlo, ST>;  // smem limit: attention_prefill_prepare
  launch(kernel, grid, kWarps * 32, bytes, s, q, kc, vc, m, T, heads, KVH, rep, bs, sl, act);
}
template <int D, typename KV, bool QLO>
void launch_q(dim3 grid, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH, int rep,
              int bs, float sl, bf16* act, cudaStream_t s) {
  if constexpr (sizeof(KV) == 2) launch_v<D, KV, QLO, 3>(grid, q, kc, vc, m, T, heads, KVH, rep, bs, sl, act, s);
  else launch_v<D, KV, QLO, 0>(grid, q, kc, vc, m, T, heads, KVH, rep, bs, sl, act, s);
}

template <int D, typename KV>
void launch_qlo(dim3 grid, bool qlo, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads, int KVH,
                int rep, int bs, float sl, bf16* act, cudaStream_t s) {
  if (qlo) launch_q<D, KV, true>(grid, q, kc, vc, m, T, heads, KVH, rep, bs, sl, act, s);
  else launch_q<D, KV, false>(grid, q, kc, vc, m, T, heads, KVH, rep, bs, sl, act, s);
}

template <typename KV>
void launch_d(int D, dim3 grid, bool qlo, const float* q, const KV* kc, const KV* vc, RowMeta m, int T, int heads,
              int KVH, int bs, bf16* act, cudaStream_t s) {
  const float scale_log2 = 1.4426950408889634f / sqrtf(float(D));  // softmax in the log2 domain
  const int rep = heads / KVH;
  if (D == 128) launch_qlo<128, KV>(grid, qlo, q, kc, vc, m, T, heads, KVH, rep, bs, scale_log2, act, s);
  else launch_qlo<64, KV>(grid, qlo, q, kc, vc, m, T, heads, KVH, rep, bs, scale_log2, act, s);
}

// Past the 48 KB default of dynamic shared memory: raised once per model, at its creation, on its
// device. Not lazily at the first launch (as before): that launch may come inside a graph capture,
// where a failing call would have gone unnoticed behind the cached process-wide "done" flag, and
// the flag was wrong with more than one device (the limit is per device context).
template <int D, typename KV, bool QLO, int ST>
cudaError_t size_v() {
  constexpr bool kvlo = sizeof(KV) == 4;
  return cudaFuncSetAttribute(attn_prefill_kernel<D, KV, QLO, kvlo, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(prefill_smem_bytes<D, QLO, kvlo, ST>()));
}
template <int D, typename KV, bool QLO>
cudaError_t size_q() {
  if constexpr (sizeof(KV) == 2) return size_v<D, KV, QLO, 3>();
  else return size_v<D, KV, QLO, 0>();
}
template <int D, typename KV>
cudaError_t size_qlo(bool qlo) {
  return qlo ? size_q<D, KV, true>() : size_q<D, KV, false>();
}

}  // namespace

cudaError_t attention_prefill_prepare(int D, bool kv_bf16, int planes) {
  const bool qlo = planes == 2;
  if (D == 128) return kv_bf16 ? size_qlo<128, bf16>(qlo) : size_qlo<128, float>(qlo);
  return kv_bf16 ? size_qlo<64, bf16>(qlo) : size_qlo<64, float>(qlo);
}

int attn_rows_per_tile(int heads, int kv_heads) { return kTileQ / (heads / kv_heads); }

void attention_prefill(const float* q, const void* k_cache, const void* v_cache, bool kv_bf16, RowMeta m, int T,
                       int tiles, int heads, int kv_heads, int D, int block_size, int planes, bf16* act,
                       cudaStream_t s) {
  const dim3 grid(tiles, kv_heads);
  if (kv_bf16)
    launch_d<bf16>(D, grid, planes == 2, q, static_cast<const bf16*>(k_cache), static_cast<const bf16*>(v_cache), m, T,
                   heads, kv_heads, block_size, act, s);
  else
    launch_d<float>(D, grid, planes == 2, q, static_cast<const float*>(k_cache), static_cast<const float*>(v_cache), m,
                    T, heads, kv_heads, block_size, act, s);
}

}  // namespace eec
