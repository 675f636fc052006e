// Tensor-core helpers shared by the attention kernels: mma.sync m16n8k16 (bf16 in, fp32 accumulate),
// ldmatrix, bf16 hi/lo splits, reductions over the 4 lanes of an mma row. Needs sm_80 or newer.
#pragma once
#include "device.cuh"

namespace eec {
namespace {

__device__ __forceinline__ uint32_t as_u32(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }

// (a, b) as a bf16 pair (a in the low half: the lower column / key of an mma fragment register),
// with the rounding error's pair in lo when LO.
template <bool LO>
__device__ __forceinline__ void split2(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  hi = as_u32(h);
  if (LO) {
    const float2 hf = __bfloat1622float2(h);
    lo = as_u32(__floats2bfloat162_rn(a - hf.x, b - hf.y));
  }
}

// c[16x8] += a[16x16] · b[16x8]. Fragments (g = lane / 4, t = lane % 4): a0 (row g, k 2t..2t+1),
// a1 (row g+8, k 2t..), a2 (row g, k 2t+8..), a3 (row g+8, k 2t+8..); b0 (k 2t..2t+1, col g),
// b1 (k 2t+8.., col g); c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, same cols).
__device__ __forceinline__ void mma(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Where a lane's ldmatrix.x4 row address points in a row-major bf16 tile of row stride ld, for the
// two x4 layouts the attention kernels use (lane's element offset from the 16-row block's start):
// - rows16: lanes 0-15 name rows 0-15 at column 0, lanes 16-31 the same rows at column 8. With
//   ldsm_x4: a 16x16 A fragment (a0..a3). With ldsm_x4_trans on a [key][dim] tile: the B fragments
//   of n-tiles (dims) 0 and 1 over 16 keys.
// - b_pair: matrix m = lane / 8 is rows 8 (m / 2) .. + 7 at columns 8 (m % 2) .. + 7. With ldsm_x4
//   on a [key][dim] tile read as B[k = dim][n = key]: the B fragments of n-tiles (keys) 0 and 1 at
//   one 16-dim k-step (registers 0 / 1: n-tile 0's b0 / b1, 2 / 3: n-tile 1's).
__device__ __forceinline__ int ldsm_rows16(int lane, int ld) { return (lane % 16) * ld + (lane / 16) * 8; }
__device__ __forceinline__ int ldsm_b_pair(int lane, int ld) {
  return ((lane >> 4) * 8 + (lane & 7)) * ld + ((lane >> 3) & 1) * 8;
}

// Two B fragment pairs at once, for n-tiles n and n + 1 of a [key][dim] tile read as B[k = key][n = dim]
// (row addresses: ldsm_rows16 at column 8n); r0 / r1 are n-tile n's (b0, b1), r2 / r3 n-tile n + 1's.
__device__ __forceinline__ void ldsm_x4_trans(uint32_t* r, const bf16* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(kFull, v, 1));
  return fmaxf(v, __shfl_xor_sync(kFull, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(kFull, v, 1);
  return v + __shfl_xor_sync(kFull, v, 2);
}

// One online-softmax step (log2 domain) for mma row pair half ii (row g: ii = 0, row g + 8: ii = 1)
// over a chunk's S accumulators s[n][2 * ii + c] (n < NS n-tiles, c < 2): entries keep(n, c) rejects
// are masked, the rest scaled by scale_log2; s becomes P = exp2(s - max). mrun / lrun (the row's
// running max and sum) are updated; returns the factor the row's O accumulators must be scaled by.
// A row with no key yet keeps max -inf and P = 0.
template <int NS, typename Keep>
__device__ __forceinline__ float online_softmax(float (&s)[NS][4], int ii, float scale_log2, Keep keep, float& mrun,
                                                float& lrun) {
  float mx = -INFINITY;
#pragma unroll
  for (int n = 0; n < NS; ++n)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float& v = s[n][2 * ii + c];
      v = keep(n, c) ? v * scale_log2 : -INFINITY;
      mx = fmaxf(mx, v);
    }
  const float m_new = fmaxf(mrun, quad_max(mx));
  const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // exp2(-inf - 0) = 0
  const float corr = exp2f(mrun - m_use);
  float sum = 0;
#pragma unroll
  for (int n = 0; n < NS; ++n)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float& v = s[n][2 * ii + c];
      v = exp2f(v - m_use);
      sum += v;
    }
  lrun = lrun * corr + quad_sum(sum);
  mrun = m_new;
  return corr;
}

// Four 8x8 bf16 matrices out of shared memory, lanes 8m .. 8m + 7 naming matrix m's rows: an A
// fragment of a row-major [16][k] tile (ldsm_rows16; a0..a3 as mma() wants them), or two n-tiles'
// B fragments (ldsm_b_pair).
__device__ __forceinline__ void ldsm_x4(uint32_t* a, const bf16* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
}

// 16 bytes global -> shared without passing through registers (sm_80+); completion is tracked in
// commit groups: cp_async_commit() closes the thread's current group, cp_async_wait<N>() waits
// until at most N of its groups are still in flight.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  cp_async_commit();
  cp_async_wait<0>();
}

}  // namespace
}  // namespace eec
