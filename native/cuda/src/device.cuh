// Device helpers shared by the kernel files: activation planes, KV-cache element access.
#pragma once
#include <cuda_bf16.h>
#include <cstdint>

namespace eec {
namespace {

using bf16 = __nv_bfloat16;
constexpr unsigned kFull = 0xffffffffu;

// act[hi_idx] = bf16(v); with two planes also act[hi_idx + lo_off] = bf16(v - hi).
__device__ __forceinline__ void store_act(float v, bf16* act, size_t hi_idx, size_t lo_off, int planes) {
  const bf16 h = __float2bfloat16_rn(v);
  act[hi_idx] = h;
  if (planes == 2) act[hi_idx + lo_off] = __float2bfloat16_rn(v - __bfloat162float(h));
}

// A GEMM output element: the hi plane's, plus the lo plane's (lo_off further) with two planes.
__device__ __forceinline__ float planes_sum(const float* y, size_t idx, size_t lo_off, int planes) {
  return planes == 2 ? y[idx] + y[idx + lo_off] : y[idx];
}

// Element offset of a sequence's key in a paged cache [block][bs][KVH][D] for KV head kvh, through
// its block table bt (shift and mask when bs is a power of two).
struct PagedRows {
  const int32_t* bt;
  int bs, bmask, bshift, KVH, kvh, D;
  bool pow2;
  __device__ __forceinline__ size_t operator()(int key) const {
    int b, o;
    if (pow2) {
      b = key >> bshift;
      o = key & bmask;
    } else {
      b = key / bs;
      o = key - b * bs;
    }
    return ((size_t(bt[b]) * bs + o) * KVH + kvh) * D;
  }
};
// (A function, not a constructor: nvcc's host pass rejects __ffs in a __device__ constructor.)
__device__ __forceinline__ PagedRows paged_rows(const int32_t* bt, int bs, int KVH, int kvh, int D) {
  return PagedRows{bt, bs, bs - 1, __ffs(bs) - 1, KVH, kvh, D, (bs & (bs - 1)) == 0};
}

__device__ __forceinline__ void store_kv(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_kv(bf16* p, float v) { *p = __float2bfloat16_rn(v); }

// Four consecutive cache elements as floats (16-byte / 8-byte aligned: D is a multiple of 4).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const bf16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

}  // namespace
}  // namespace eec
