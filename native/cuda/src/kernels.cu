#include <cfloat>
#include <cmath>

#include "kernels.cuh"

namespace eec {

namespace {

__device__ __forceinline__ void split_store(float v, __nv_bfloat16* hi, __nv_bfloat16* lo) {
  const __nv_bfloat16 h = __float2bfloat16_rn(v);
  *hi = h;
  *lo = __float2bfloat16_rn(v - __bfloat162float(h));
}

// Deterministic block sum (fixed butterfly inside warps, warps summed in order by thread 0).
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int w = threadIdx.x / 32, nw = (blockDim.x + 31) / 32;
  if (threadIdx.x % 32 == 0) red[w] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (int i = 0; i < nw; ++i) s += red[i];
    red[32] = s;
  }
  __syncthreads();
  const float r = red[32];
  __syncthreads();
  return r;
}

__global__ void embed_kernel(const __nv_bfloat16* table, const int32_t* token, int H, float* x) {
  const int r = blockIdx.x;
  const __nv_bfloat16* row = table + size_t(token[r]) * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) x[size_t(r) * H + i] = __bfloat162float(row[i]);
}

// Dynamic shared memory: H floats (the row being normalised).
__global__ void residual_rmsnorm_kernel(float* x, const float* y, const int32_t* rows, int T, int R, int H,
                                        const float* w, float eps, bool write_x, __nv_bfloat16* act) {
  extern __shared__ float row[];
  __shared__ float red[33];
  const int i = blockIdx.x;
  const int r = rows ? rows[i] : i;
  float* xr = x + size_t(r) * H;
  float ss = 0;
  for (int k = threadIdx.x; k < H; k += blockDim.x) {
    float v = xr[k];
    if (y) v += y[size_t(r) * H + k] + y[size_t(T + r) * H + k];
    row[k] = v;
    if (write_x) xr[k] = v;
    ss += v * v;
  }
  const float inv = 1.0f / sqrtf(block_sum(ss, red) / float(H) + eps);
  for (int k = threadIdx.x; k < H; k += blockDim.x)
    split_store(row[k] * inv * w[k], act + size_t(i) * H + k, act + size_t(R + i) * H + k);
}

__global__ void rope_kv_kernel(const float* qkv, RowMeta m, int heads, int kv_heads, int D, const float* inv_freq,
                               bool interleaved, float* q_out, float* k_cache, float* v_cache, int T) {
  const int r = blockIdx.x;
  const int QD = heads * D, KVD = kv_heads * D, W = QD + 2 * KVD, half = D / 2;
  const float* hi = qkv + size_t(r) * W;
  const float* lo = qkv + size_t(T + r) * W;
  const float pos = float(m.pos[r]);
  const size_t slot = size_t(m.slot[r]);
  // q and k: one thread per rotated pair.
  for (int e = threadIdx.x; e < (heads + kv_heads) * half; e += blockDim.x) {
    const int h = e / half, i = e % half;
    const float angle = pos * inv_freq[i];
    double sd, cd;
    sincos(double(angle), &sd, &cd);
    const float c = float(cd), s = float(sd);
    const int a_i = interleaved ? 2 * i : i, b_i = interleaved ? 2 * i + 1 : i + half;
    const int col = h * D;  // q heads first, then k heads (contiguous in the GEMM output)
    const float a = hi[col + a_i] + lo[col + a_i], b = hi[col + b_i] + lo[col + b_i];
    // Same fp32 operations as the reference: each product rounded, then added (no FMA contraction).
    const float ra = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    const float rb = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
    if (h < heads) {
      q_out[size_t(r) * QD + col + a_i] = ra;
      q_out[size_t(r) * QD + col + b_i] = rb;
    } else {
      float* kd = k_cache + slot * KVD + (col - QD);
      kd[a_i] = ra;
      kd[b_i] = rb;
    }
  }
  for (int e = threadIdx.x; e < KVD; e += blockDim.x)
    v_cache[slot * KVD + e] = hi[QD + KVD + e] + lo[QD + KVD + e];
}

template <int REP, int D>
__global__ void __launch_bounds__(D) attn_part_kernel(const float* q, const float* kc, const float* vc, RowMeta m,
                                                      int heads, int KVH, int bs, int NP, float scale, float* part_acc,
                                                      float* part_ml) {
  const int r = blockIdx.x, g = blockIdx.y, p = blockIdx.z, t = threadIdx.x;
  const int ctx = m.pos[r] + 1;
  const int k0 = p * kAttnPart;
  if (k0 >= ctx) return;
  const int k1 = min(ctx, k0 + kAttnPart);
  __shared__ float qs[REP][D];
  __shared__ float ks[32][D + 1];  // +1: lanes reading 32 different keys at one d hit 32 banks
  __shared__ float vs[32][D];
  __shared__ float ss[REP][32];
  __shared__ float ms[REP], ls[REP], cs[REP];
  const size_t QD = size_t(heads) * D;
#pragma unroll
  for (int h = 0; h < REP; ++h) qs[h][t] = q[size_t(r) * QD + size_t(g * REP + h) * D + t];
  if (t < REP) {
    ms[t] = -INFINITY;
    ls[t] = 0;
  }
  float acc[REP];
#pragma unroll
  for (int h = 0; h < REP; ++h) acc[h] = 0;
  const int32_t* bt = m.bt + m.bt_off[r];
  __syncthreads();
  for (int j0 = k0; j0 < k1; j0 += 32) {
    const int n = min(32, k1 - j0);
    for (int j = 0; j < n; ++j) {
      const int key = j0 + j;
      const size_t off = ((size_t(bt[key / bs]) * bs + key % bs) * KVH + g) * D + t;
      ks[j][t] = kc[off];
      vs[j][t] = vc[off];
    }
    __syncthreads();
    for (int e = t; e < REP * 32; e += D) {
      const int h = e / 32, j = e % 32;
      float sc = -INFINITY;
      if (j < n) {
        float d = 0;
#pragma unroll 16
        for (int i = 0; i < D; ++i) d = fmaf(qs[h][i], ks[j][i], d);
        sc = d * scale;
      }
      ss[h][j] = sc;
    }
    __syncthreads();
    const int w = t / 32, lane = t % 32;
    for (int h = w; h < REP; h += D / 32) {
      const float v = ss[h][lane];
      float mx = v;
      for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_old = ms[h];
      const float m_new = fmaxf(m_old, mx);
      const float pr = lane < n ? expf(v - m_new) : 0.0f;
      float sum = pr;
      for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      ss[h][lane] = pr;
      if (lane == 0) {
        const float c = expf(m_old - m_new);
        cs[h] = c;
        ls[h] = ls[h] * c + sum;
        ms[h] = m_new;
      }
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < REP; ++h) {
      float a = acc[h] * cs[h];
      for (int j = 0; j < n; ++j) a = fmaf(ss[h][j], vs[j][t], a);
      acc[h] = a;
    }
    __syncthreads();
  }
  const size_t base = ((size_t(r) * KVH + g) * NP + p) * REP;
#pragma unroll
  for (int h = 0; h < REP; ++h) part_acc[(base + h) * D + t] = acc[h];
  if (t < REP) {
    part_ml[(base + t) * 2] = ms[t];
    part_ml[(base + t) * 2 + 1] = ls[t];
  }
}

__global__ void attn_combine_kernel(const float* part_acc, const float* part_ml, RowMeta m, int T, int heads, int KVH,
                                    int D, int NP, __nv_bfloat16* act) {
  const int r = blockIdx.x, h = blockIdx.y, t = threadIdx.x;
  const int rep = heads / KVH, g = h / rep, hh = h % rep;
  const int np = (m.pos[r] + kAttnPart) / kAttnPart;  // ceil((pos + 1) / P)
  const size_t base = (size_t(r) * KVH + g) * NP * rep + hh;
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
  split_store(O / L, act + size_t(r) * QD + size_t(h) * D + t, act + size_t(T + r) * QD + size_t(h) * D + t);
}

__global__ void silu_mul_kernel(const float* y, int T, int I, __nv_bfloat16* act) {
  const size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size_t(T) * I) return;
  const size_t r = idx / I, i = idx % I;
  const float* hi = y + r * 2 * I;
  const float* lo = y + (size_t(T) + r) * 2 * I;
  const float g = hi[i] + lo[i], u = hi[I + i] + lo[I + i];
  split_store(g / (1.0f + expf(-g)) * u, act + r * I + i, act + (size_t(T) + r) * I + i);
}

__global__ void logits_sum_kernel(const float* y, int R, int V, float* logits) {
  const size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size_t(R) * V) return;
  logits[idx] = y[idx] + y[size_t(R) * V + idx];
}

__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

__global__ void logits_argmax_kernel(const float* y, int R, int V, int32_t* out) {
  __shared__ float sv[1024];
  __shared__ int si[1024];
  const int r = blockIdx.x, t = threadIdx.x;
  const float* hi = y + size_t(r) * V;
  const float* lo = y + size_t(R + r) * V;
  float bv = -INFINITY;
  int bi = V;
  for (int v = t; v < V; v += blockDim.x) {
    const float x = hi[v] + lo[v];
    // Strictly greater keeps this thread's first maximum (v increases); NaN never wins.
    if (x > bv || (bi == V && x == x)) {
      bv = x;
      bi = v;
    }
  }
  sv[t] = bv;
  si[t] = bi;
  __syncthreads();
  for (int s = blockDim.x / 2; s; s >>= 1) {
    if (t < s && better(sv[t + s], si[t + s], sv[t], si[t])) {
      sv[t] = sv[t + s];
      si[t] = si[t + s];
    }
    __syncthreads();
  }
  if (t == 0) out[r] = si[0] < V ? si[0] : 0;
}

__global__ void copy_blocks_kernel(float* cache, const int32_t* pairs, size_t block_floats) {
  const size_t src = size_t(pairs[2 * blockIdx.y]), dst = size_t(pairs[2 * blockIdx.y + 1]);
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < block_floats; i += size_t(gridDim.x) * blockDim.x)
    cache[dst * block_floats + i] = cache[src * block_floats + i];
}

template <int D>
void launch_attn(int rep, dim3 grid, const float* q, const float* kc, const float* vc, RowMeta m, int heads, int KVH,
                 int bs, int NP, float scale, float* pa, float* pm, cudaStream_t s) {
  switch (rep) {
#define EEC_REP(R) \
  case R: attn_part_kernel<R, D><<<grid, D, 0, s>>>(q, kc, vc, m, heads, KVH, bs, NP, scale, pa, pm); break;
    EEC_REP(1)
    EEC_REP(2)
    EEC_REP(4)
    EEC_REP(8)
    EEC_REP(16)
#undef EEC_REP
  }
}

}  // namespace

void embed(const __nv_bfloat16* table, RowMeta m, int T, int H, float* x, cudaStream_t s) {
  embed_kernel<<<T, 256, 0, s>>>(table, m.token, H, x);
}

void residual_rmsnorm(float* x, const float* y, const int32_t* rows, int T, int R, int H, const float* w, float eps,
                      bool write_x, __nv_bfloat16* act, cudaStream_t s) {
  residual_rmsnorm_kernel<<<R, 256, size_t(H) * sizeof(float), s>>>(x, y, rows, T, R, H, w, eps, write_x, act);
}

void rope_kv(const float* qkv, RowMeta m, int T, int heads, int kv_heads, int D, const float* inv_freq, bool interleaved,
             float* q_out, float* k_cache, float* v_cache, cudaStream_t s) {
  rope_kv_kernel<<<T, 256, 0, s>>>(qkv, m, heads, kv_heads, D, inv_freq, interleaved, q_out, k_cache, v_cache, T);
}

bool attention_supported(int heads, int kv_heads, int D) {
  const int rep = heads / kv_heads;
  return (D == 64 || D == 128) && (rep == 1 || rep == 2 || rep == 4 || rep == 8 || rep == 16);
}

void attention(const float* q, const float* k_cache, const float* v_cache, RowMeta m, int T, int heads, int kv_heads,
               int D, int block_size, int num_parts, float* part_acc, float* part_ml, __nv_bfloat16* act,
               cudaStream_t s) {
  const dim3 grid(T, kv_heads, num_parts);
  const float scale = 1.0f / sqrtf(float(D));
  const int rep = heads / kv_heads;
  if (D == 128)
    launch_attn<128>(rep, grid, q, k_cache, v_cache, m, heads, kv_heads, block_size, num_parts, scale, part_acc, part_ml, s);
  else
    launch_attn<64>(rep, grid, q, k_cache, v_cache, m, heads, kv_heads, block_size, num_parts, scale, part_acc, part_ml, s);
  attn_combine_kernel<<<dim3(T, heads), D, 0, s>>>(part_acc, part_ml, m, T, heads, kv_heads, D, num_parts, act);
}

void silu_mul(const float* y, int T, int I, __nv_bfloat16* act, cudaStream_t s) {
  const size_t n = size_t(T) * I;
  silu_mul_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(y, T, I, act);
}

void logits_sum(const float* y, int R, int V, float* logits, cudaStream_t s) {
  const size_t n = size_t(R) * V;
  logits_sum_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(y, R, V, logits);
}

void logits_argmax(const float* y, int R, int V, int32_t* argmax, cudaStream_t s) {
  logits_argmax_kernel<<<R, 1024, 0, s>>>(y, R, V, argmax);
}

void copy_blocks(float* cache, const int32_t* pairs, int n, size_t block_floats, cudaStream_t s) {
  copy_blocks_kernel<<<dim3(16, n), 256, 0, s>>>(cache, pairs, block_floats);
}

}  // namespace eec
