// CUDA kernels of the model runner. Activations are fp32; GEMM inputs are split into two bf16
// planes (hi = bf16(x), lo = bf16(x - hi)) stacked along M, so one bf16 GEMM with fp32 accumulate
// gives W·hi and W·lo in one read of the weights; consumers add the two halves (the CPU backend's
// "precise" scheme: ~16 mantissa bits of x, fp32-grade results at bf16 tensor-core speed).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

#include "ernie_cuda.h"  // EE_CUDA_MAX_BANS

namespace eec {

// Per-step row metadata on the device (one int buffer, uploaded once per step).
struct RowMeta {
  const int32_t* token;     // [T]
  const int32_t* pos;       // [T] position of the row's token
  const int32_t* slot;      // [T] KV slot = block * block_size + pos % block_size
  const int32_t* bt_off;    // [T] offset of the row's sequence's block table in `bt`
  const int32_t* tile_row;  // [tiles] first row of an attention tile (consecutive rows of one sequence)
  const int32_t* tile_n;    // [tiles] rows in the tile (1..attn_rows_per_tile)
  const int32_t* out_row;   // [R] rows that produce logits
  const int32_t* counts;    // [2] decode tiles, then prefill tiles; the attention grids may be larger
                            // (graphs are captured for the most tiles a step of their size can have)
                            // and blocks past these counts exit at once
  const int32_t* bt;        // flat block tables
};

// Activation planes: 2 = "precise" (hi and lo bf16 planes, fp32-grade results), 1 = plain bf16
// activations (what bf16 serving engines and HF transformers in bf16 compute). With one plane the
// lo halves below are absent and GEMM outputs have T rows instead of 2T.

// A one-thread kernel that keeps the GPU busy for about ns nanoseconds (the op profiler's).
void spin(long long ns, cudaStream_t s);

// x[r] = embed[token[r]] (fp32).
void embed(const __nv_bfloat16* table, RowMeta m, int T, int H, float* x, cudaStream_t s);

// GEMM outputs (y below) are fp32 [planes*T, N], or bf16 [T, N] when y_bf16 (one plane only; the
// buffer is the same, read as bf16).

// For output row i (input row r = rows ? rows[i] : i): x_r += y[r] (+ y[T + r] with two planes)
// when y is given (y: GEMM output [planes*T, H]), written back to x when write_x; then
// act[i] = bf16 planes of rmsnorm(x_r) * w (act: [planes*R, H], hi rows then lo rows).
void residual_rmsnorm(float* x, const float* y, bool y_bf16, const int32_t* rows, int T, int R, int H, const float* w,
                      float eps, bool write_x, int planes, __nv_bfloat16* act, cudaStream_t s);

// qkv: GEMM output [planes*T, QD + 2*KVD]. q (RoPE'd, fp32) -> q_out [T, QD]; k (RoPE'd) and v ->
// the layer's caches at each row's slot. Caches: [num_blocks + 1, block_size, kv_heads, head_dim],
// fp32 or bf16 (kv_bf16).
void rope_kv(const float* qkv, bool qkv_bf16, RowMeta m, int T, int heads, int kv_heads, int D, const float* inv_freq,
             bool interleaved, int planes, float* q_out, void* k_cache, void* v_cache, bool kv_bf16, cudaStream_t s);

// Paged causal attention, written into act [planes*T, QD] for o_proj. Rows are grouped into tiles
// (RowMeta tile_row / tile_n): a decode row is a one-row tile; a prefill chunk is cut into tiles of
// up to attn_rows_per_tile consecutive rows of one sequence, which share every K/V chunk loaded.
// Row r sees keys [0, pos[r]].
bool attention_supported(int heads, int kv_heads, int D);

// Once per model, before any step (never inside a graph capture): raise the dynamic shared memory
// limits of the attention kernels this shape and precision launch.
cudaError_t attention_prepare(int heads, int kv_heads, int D, bool kv_bf16, int planes);
cudaError_t attention_prefill_prepare(int D, bool kv_bf16, int planes);

// Decode rows (attention, attn_decode.cu): one-row tiles 0 .. tiles - 1 (decode tiles come first
// in the metadata): up to 8 rows fp32 on CUDA cores, beyond on tensor cores (as the prefill). Keys
// are split into partitions of `part_keys` (32, 64 or 128; flash-decoding): partition p of row r
// covers keys [p*P, min(ctx, (p+1)*P)), ctx = pos[r] + 1. With num_parts == 1 a row writes its
// output straight into act; otherwise partials indexed by tile go to part_acc / part_ml and a
// combine kernel merges them in a fixed order.
// Prefill tiles (attention_prefill, attn_prefill.cu): tensor cores, one partition per tile; they
// follow the decode tiles (tile m.counts[0] + i).
// `tiles` of both: the grid's tiles, at least the step's count in m.counts.
// NOTE: a row's arithmetic (dot order, chunk order, partition bounds) depends only on its own
// position and part_keys, never on the tile or the batch around it; part_keys of decode rows
// depends on how many there are (attn_decode_part_keys), so logits may differ in the last bits
// between batch sizes (as cuBLAS's GEMM algorithms do), never the greedy tokens in our tests.
// Keys per partition for `rows` one-row tiles: small when few rows (parallelism at batch 1),
// larger when many (fewer partials to write and merge).
// walk (bf16 cache and one plane only; the model's choice): from 128 rows, one partition per row
// (kWalkRow keys), read whole by attn_decode_walk_kernel, a block per (row, KV head).
constexpr int kMaxPartKeys = 128;
constexpr int kWalkRow = 1 << 24;
inline int attn_decode_part_keys(int rows, bool walk = false) {
  return walk && rows >= 128 ? kWalkRow : rows <= 8 ? 32 : rows <= 64 ? 64 : 128;
}
void attention(const float* q, const void* k_cache, const void* v_cache, bool kv_bf16, RowMeta m, int T, int tiles,
               int heads, int kv_heads, int D, int block_size, int part_keys, int num_parts, int planes,
               float* part_acc, float* part_ml, __nv_bfloat16* act, cudaStream_t s);
int attn_rows_per_tile(int heads, int kv_heads);
void attention_prefill(const float* q, const void* k_cache, const void* v_cache, bool kv_bf16, RowMeta m, int T,
                       int tiles, int heads, int kv_heads, int D, int block_size, int planes, __nv_bfloat16* act,
                       cudaStream_t s);

// y: gate/up GEMM output [planes*T, 2I] (gate | up per row); act [planes*T, I] = planes of silu(gate) * up.
void silu_mul(const float* y, bool y_bf16, int T, int I, int planes, __nv_bfloat16* act, cudaStream_t s);

// y: lm_head output [planes*R, V]; logits[i] = y[i] (+ y[R + i]) (fp32) or, when argmax is given,
// the index of the first maximum of that sum per row.
void logits_sum(const float* y, int R, int V, int planes, float* logits, cudaStream_t s);
// keys: [R] scratch (64-bit) for the parallel argmax.
void logits_argmax(const float* y, int R, int V, int planes, unsigned long long* keys, int32_t* argmax, cudaStream_t s);

// Per logits row: temperature <= 0 is greedy; top_k 0 = off; u is the row's uniform draw in [0, 1)
// (from the sequence's own random stream, on the host).
struct SampleParams {
  float temperature, top_p, min_p, u;
  int top_k, n_ban, masked, pad2;  // masked: the row's grammar mask is in the step's mask rows
  int32_t ban[EE_CUDA_MAX_BANS];   // the first n_ban: ids the row may not pick (their logits become -inf)
};
// y: lm_head output [planes*R, V] (overwritten); out[r] = the sampled token of row r. masks: [R,
// ceil(V / 32)] grammar masks, row r read when params[r].masked (bit v % 32 of word v / 32: v allowed).
void sample(float* y, int R, int V, int planes, const SampleParams* params, const uint32_t* masks, int32_t* out,
            cudaStream_t s);

// out[M, N] = a[M, K] · w[N, K]^T (bf16 in, fp32 or bf16 out (out_bf16), row-major) for small M: a
// weight-streaming GEMV (cuBLAS's small-M kernels read the weights at a fraction of HBM bandwidth).
// Deterministic. Returns false (nothing launched) when the shape is not supported (M > 16 or K % 8 != 0).
bool gemv(const __nv_bfloat16* w, int N, int K, const __nv_bfloat16* a, int M, void* out, bool out_bf16,
          cudaStream_t s);

// Whole-block copies inside one layer's cache (pairs[2*i] -> pairs[2*i+1]), for copy-on-write.
void copy_blocks(void* cache, const int32_t* pairs, int n, size_t block_bytes, cudaStream_t s);

}  // namespace eec
