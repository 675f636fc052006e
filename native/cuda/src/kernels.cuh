// CUDA kernels of the model runner. Activations are fp32; GEMM inputs are split into two bf16
// planes (hi = bf16(x), lo = bf16(x - hi)) stacked along M, so one bf16 GEMM with fp32 accumulate
// gives W·hi and W·lo in one read of the weights; consumers add the two halves (the CPU backend's
// "precise" scheme: ~16 mantissa bits of x, fp32-grade results at bf16 tensor-core speed).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace eec {

// Per-step row metadata on the device (one int buffer, uploaded once per step).
struct RowMeta {
  const int32_t* token;   // [T]
  const int32_t* pos;     // [T] position of the row's token
  const int32_t* slot;    // [T] KV slot = block * block_size + pos % block_size
  const int32_t* bt_off;  // [T] offset of the row's sequence's block table in `bt`
  const int32_t* out_row; // [R] rows that produce logits
  const int32_t* bt;      // flat block tables
};

// x[r] = embed[token[r]] (fp32).
void embed(const __nv_bfloat16* table, RowMeta m, int T, int H, float* x, cudaStream_t s);

// For output row i (input row r = rows ? rows[i] : i): x_r += y[r] + y[T + r] when y is given
// (y: GEMM output [2T, H], hi half then lo half), written back to x when write_x; then
// act[i] = bf16 hi/lo split of rmsnorm(x_r) * w (act: [2R, H], hi rows then lo rows).
void residual_rmsnorm(float* x, const float* y, const int32_t* rows, int T, int R, int H, const float* w, float eps,
                      bool write_x, __nv_bfloat16* act, cudaStream_t s);

// qkv: GEMM output [2T, QD + 2*KVD]. q (RoPE'd, fp32) -> q_out [T, QD]; k (RoPE'd) and v -> the
// layer's caches at each row's slot. Caches: [num_blocks + 1, block_size, kv_heads, head_dim] fp32.
void rope_kv(const float* qkv, RowMeta m, int T, int heads, int kv_heads, int D, const float* inv_freq, bool interleaved,
             float* q_out, float* k_cache, float* v_cache, cudaStream_t s);

// Paged causal attention, split into key partitions of kAttnPart keys (flash-decoding). Partition
// p of row r covers keys [p*P, min(ctx, (p+1)*P)), ctx = pos[r] + 1; the combine step merges them
// and writes the attention output straight into act [2T, QD] (hi/lo planes) for o_proj.
// NOTE: partitions depend only on the row's own context length and every reduction has a fixed
// order, so a row's attention output is bit-identical whatever else is in the batch.
constexpr int kAttnPart = 256;
bool attention_supported(int heads, int kv_heads, int D);
void attention(const float* q, const float* k_cache, const float* v_cache, RowMeta m, int T, int heads, int kv_heads,
               int D, int block_size, int num_parts, float* part_acc, float* part_ml, __nv_bfloat16* act,
               cudaStream_t s);

// y: gate/up GEMM output [2T, 2I] (gate | up per row); act [2T, I] = split(silu(gate) * up).
void silu_mul(const float* y, int T, int I, __nv_bfloat16* act, cudaStream_t s);

// y: lm_head output [2R, V]; logits[i] = y[i] + y[R + i] (fp32) or, when argmax is given, the
// index of the first maximum of that sum per row.
void logits_sum(const float* y, int R, int V, float* logits, cudaStream_t s);
void logits_argmax(const float* y, int R, int V, int32_t* argmax, cudaStream_t s);

// Whole-block copies inside one layer's cache (pairs[2*i] -> pairs[2*i+1]), for copy-on-write.
void copy_blocks(float* cache, const int32_t* pairs, int n, size_t block_floats, cudaStream_t s);

}  // namespace eec
