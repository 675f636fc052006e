// CPU compute kernels behind a function table chosen once at start-up from the CPU's features
// (AMX-BF16 GEMMs where the CPU and the kernel allow tiles, else AVX-512 + AVX512-BF16, else AVX2 +
// FMA). Only the model runner calls these. The int8 GEMMs (--quantization int8) are qgemm.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bf16.h"

namespace ee::cpu {

// GEMM activations, prepared once per input and shared by every weight matrix that reads it.
// AVX512-BF16: x split into bf16 planes hi = bf16(x), lo = bf16(x - hi), rows padded to Kp (a
// multiple of 32) with zeros; W·x = W·hi + W·lo keeps ~16 bits of x's mantissa (fp32-grade
// results at bf16 dot-product speed). precise=false drops the lo plane (x rounded to bf16, as
// llama.cpp does). AMX-BF16: the same planes in tile order, 16 rows per group (amx_bf16.inc). AVX2:
// a plain fp32 copy of x. Each table's act_bytes / prepare_act make the layout its gemm reads.
struct Act {
  void* data = nullptr;
  int M = 0, K = 0, Kp = 0;
  bool precise = true;
};

// Packed weight layout ("V32"), made once at load, for GEMMs in broadcast form: rows (outputs)
// are taken in blocks of 32; block b holds, for each k-pair p (k = 2p, 2p + 1), its 32 rows' pairs
// back to back: [row 0: w[k], w[k+1] | row 1: ... | row 31], 64 bf16 = 128 bytes per pair, Kp / 2
// pairs. That is the operand order of AVX512-BF16's vdpbf16ps (each 32-bit lane one bf16 pair) for
// two vectors of 16 outputs. Rows past the last full block are stored plainly after the blocks.
// Every row is zero-padded to Kp (a multiple of 32). A GEMM reads each block as one sequential
// stream with no tails, and each output lane accumulates its own k-pairs in order (no horizontal
// sums).
// NOTE: it replaced P4x32 (4 rows per group, 32-wide k-blocks, dot-product form with a horizontal
// sum per output), measured faster (native/README.md).
constexpr int kPackRows = 32;
constexpr int kPackK = 32;
inline int pad_k(int k) { return (k + kPackK - 1) / kPackK * kPackK; }
inline size_t packed_elems(int n, int k) { return size_t(n) * size_t(pad_k(k)); }
void pack_matrix(const bf16_t* src, int n, int k, bf16_t* dst, int row_begin, int row_end);
// Row r of a packed [n, k] matrix, widened to fp32 (embedding lookups from a tied lm_head).
void unpack_row(const bf16_t* packed, int n, int k, int r, float* out);
// Element (r, c) of a packed [n, k] matrix (c < pad_k(k)).
inline size_t packed_index(int n, int k, int r, int c) {
  const int kp = pad_k(k), full = n / kPackRows * kPackRows;
  if (r >= full) return size_t(r) * size_t(kp) + size_t(c);
  return size_t(r / kPackRows) * kPackRows * size_t(kp) + size_t(c / 2) * 2 * kPackRows + size_t(r % kPackRows) * 2 +
         size_t(c % 2);
}

struct AttnSeq {
  const float* q;  // [n_tokens, num_heads*head_dim], RoPE applied
  float* out;      // [n_tokens, num_heads*head_dim]
  int n_tokens;
  int start_pos;               // position of q's first token; keys 0..start_pos+t are visible to token t
  const int32_t* block_table;  // KV block ids covering positions 0..start_pos+n_tokens-1
};

struct AttnLayer {
  const void* k_cache;  // [num_blocks, num_kv_heads, head_dim, block_size] (K transposed per block)
  const void* v_cache;  // [num_blocks, num_kv_heads, block_size, head_dim]
  bool kv_bf16;         // cache elements bf16 (widened to fp32 as they are loaded), else fp32
  int block_size;
  int num_heads;
  int num_kv_heads;
  int head_dim;
  float scale;  // head_dim^-0.5
  // q and the softmax weights rounded to bf16 too, for bf16 dot products against a bf16 cache
  // (--dtype bfloat16 --kv-cache-dtype bfloat16, where the ISA has AVX512-BF16); else fp32 math.
  bool bf16_dot = false;
};

// Floats of scratch the attention kernel needs for up to n_keys keys.
inline size_t attention_scratch(const AttnLayer& L, int n_keys) {
  const size_t rep = size_t(L.num_heads / L.num_kv_heads);
  const size_t ld = size_t(n_keys + L.block_size - 1) / size_t(L.block_size) * size_t(L.block_size);
  return rep * ld;  // scores [rep][ld], ld = n_keys padded to whole blocks
}

struct Kernels {
  const char* isa;
  size_t (*act_bytes)(int M, int K);
  // Prepares rows [m0, m1) of x [M, K] (row stride ldx) into a (act.data sized by act_bytes).
  void (*prepare_act)(const float* x, int ldx, const Act& a, int m0, int m1);
  // y[m, n] = sum_k x[m, k] * w[n, k] for all m < M and n in [n0, n1); w is bf16 [N, K] packed
  // (V32); n0 is a multiple of 32 (kPackRows), n1 too unless it is N.
  // Every output is computed by the same instruction sequence whatever M, n0, n1 are, so results
  // are bit-identical however a batch is composed or split across threads.
  void (*gemm)(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy);
  void (*rmsnorm)(const float* x, const float* w, float eps, int n, float* out);
  void (*silu_mul)(const float* gate, const float* up, int n, float* out);  // silu(gate) * up
  void (*add_inplace)(float* x, const float* y, int n);
  void (*bf16_to_f32)(const bf16_t* src, int n, float* dst);
  float (*max_val)(const float* x, int n);
  // out[i] = exp(x[i] - shift) (out may be x, or nullptr to only sum); returns the sum.
  float (*exp_sum)(const float* x, int n, float shift, float* out);
  // Causal attention for one sequence, one KV head, query tokens [t0, t1). scratch: at least
  // attention_scratch(L, start_pos + t1) floats. num_heads / num_kv_heads <= 64.
  void (*attention)(const AttnLayer& L, const AttnSeq& s, int kv_head, int t0, int t1, float* scratch);
  // The ISA's widest multiply-add (vdpbf16ps on AVX512-BF16: 64 FLOP; vfmadd231ps on AVX2: 16)
  // on 24 independent registers (12 were latency-bound on Zen 5), `iters` x 24 times; returns
  // the FLOPs done. Timed on every thread at once: the machine's compute ceiling for the GEMMs
  // (benchmarks only).
  double (*dot_peak)(long iters);
  // Output rows per GEMM task (a multiple of kPackRows) for a GEMM of M input rows and n_out output
  // rows in all on `threads` threads; nullptr: the model runner's fixed slices.
  int (*gemm_task_rows)(int M, int n_out, int threads) = nullptr;
  // Input rows per GEMM task (a multiple of 32, or M) for a GEMM of M rows, K, n_out output rows on
  // `threads` threads, and act_rows: rows [m0, m1) of a prepared input as an input of their own
  // (m0 a multiple of that). A task then covers a block of rows and outputs whose activations and
  // weights stay in the core's L2. nullptr: every task takes all M rows.
  int (*gemm_task_m)(int M, int K, int n_out, int threads, bool precise) = nullptr;
  Act (*act_rows)(const Act& a, int m0, int m1) = nullptr;
};

// On AMX hosts, the kernel that amx-bf16 GEMMs of up to 4 rows (decode steps) run on: "avx512bf16
// (tile-exact, ... model)" where an AVX-512 model of the tile arithmetic gives the tile unit's bits
// on this CPU (checked once per process), else "amx-bf16"; "none" without AMX.
const char* amx_bf16_small_rows();
// On AMX hosts, which scalar accumulation order reproduces the tile unit's tdpbf16ps bits ("sdm",
// "sequential", "pair-fused", "tile-fused", "tile-rounded" or "unknown"; amx.cc says what each is): a
// diagnosis for the next AVX-512 model when none of amx_model.inc's matches. "none" without AMX.
const char* amx_bf16_tile_order();

// force: "amx" (AVX-512 with AMX-BF16 GEMMs), "avx512", "avx2" or "" for the best the CPU supports. Returns nullptr
// when the requested ISA is not supported by this CPU.
const Kernels* select_kernels(const std::string& force);

}  // namespace ee::cpu
