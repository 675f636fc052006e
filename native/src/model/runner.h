// The model-runner interface the engine steps through: one forward step over a batch of sequence
// slices (prefill chunks and decodes mixed), writing K/V into the paged cache and returning logits
// for the rows that asked. Implementations: ModelRunner (CPU kernels, model_runner.h) and
// CudaModelRunner (libernie_cuda.so, loaded at run time; cuda_runner.h). Only these touch tensors.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/config.h"

namespace ee {

// One sequence's part of a step: n_tokens new tokens at positions start_pos.. start_pos+n_tokens-1.
struct SeqSlice {
  const int32_t* tokens;
  int n_tokens;
  int start_pos;
  const int32_t* block_table;  // covers positions 0 .. start_pos+n_tokens-1
  int n_blocks;
  enum Logits { kNone = 0, kLast = 1, kAll = 2 } logits;
};

// Sampling where the logits are, per logits row: temperature <= 0 is greedy; top_k 0, top_p 1 and
// min_p 0 are off; u is the row's uniform draw in [0, 1) from the sequence's own random stream; the
// first n_ban ids of ban are never picked (min_tokens' stop ids); masked: the row's grammar mask
// (RequestSpec::mask_row's layout) was written to the fill's mask rows: only the tokens it allows can
// be picked.
struct DeviceSampling {
  static constexpr int kMaxBans = 8;  // = EE_CUDA_MAX_BANS (native/cuda/include/ernie_cuda.h)
  float temperature = 0, top_p = 1, min_p = 0, u = 0;
  int top_k = 0;
  int n_ban = 0;
  int32_t ban[kMaxBans] = {};
  bool masked = false;
};

// The CPU runner's cumulative wall time per phase since load (profiling; a few clock reads per
// layer). gemm_ms is the layers' GEMMs (activation preparation included), also split by matrix group.
struct RunnerProfile {
  double gemm_ms = 0, attention_ms = 0, other_ms = 0, lm_head_ms = 0;
  double gemm_qkv_ms = 0, gemm_o_ms = 0, gemm_gate_up_ms = 0, gemm_down_ms = 0;
  // Parts of other_ms: embedding lookup and RoPE angles, RoPE and the K/V cache writes, the residual
  // after down_proj (the rest of other_ms: the final norm). prep_ms: the GEMMs' activation
  // preparation (inside gemm_ms), with the norms and silu(gate) * up that run inside it.
  double embed_ms = 0, rope_kv_ms = 0, residual_ms = 0, prep_ms = 0;
  // Task time summed over the threads (ms of thread time): gemm_busy_ms / (gemm_ms * threads) is the
  // share of the GEMMs' thread time spent in tasks, the rest idle or dispatching; the same for attention.
  double gemm_busy_ms = 0, attention_busy_ms = 0;
  int threads = 0;
  uint64_t steps = 0, tokens = 0;
};

class IModelRunner {
 public:
  virtual ~IModelRunner() = default;
  // logits: rows for the slices that asked, in slice order, each vocab_size floats.
  // Errors (bad token id, short block table, bad block id) leave the cache untouched.
  virtual Status forward(const std::vector<SeqSlice>& batch, std::vector<float>& logits) = 0;
  // Greedy fast path: the index of the first maximum of each logits row, computed where the
  // logits are (only the ids cross to the host). Only when has_device_argmax().
  virtual bool has_device_argmax() const { return false; }
  virtual Status forward_argmax(const std::vector<SeqSlice>& batch, std::vector<int32_t>& tokens);
  // Sampled ids, one per logits row. Only when has_device_sampling(). params is called once per
  // step with one entry per logits row (in row order) to fill, after the forward pass is queued on
  // the device and before its sampling: what it waits for (grammar masks) overlaps the forward. A
  // masked row's mask goes to masks + row * mask_words (the runner's upload buffer, rows x
  // mask_words words), written by the fill as each mask arrives.
  using SamplingFill = std::function<void(std::vector<DeviceSampling>& params, uint32_t* masks, int mask_words)>;
  virtual bool has_device_sampling() const { return false; }
  virtual Status forward_sample(const std::vector<SeqSlice>& batch, const SamplingFill& params,
                                std::vector<int32_t>& tokens);
  // Takes the per-step scratch a step of max_tokens tokens needs, now (called at load), so that the
  // memory steps use is in RSS when the server is ready rather than grown into under load. A runner
  // that sizes its buffers at load already (CUDA) has nothing to do.
  virtual void reserve(int max_tokens) { (void)max_tokens; }
  // Copies whole KV blocks (all layers, K and V): copy-on-write after a fork.
  virtual Status copy_blocks(const std::vector<std::pair<int, int>>& src_dst) = 0;

  virtual const ModelConfig& config() const = 0;
  virtual int num_blocks() const = 0;
  virtual int block_size() const = 0;
  virtual uint64_t kv_bytes() const = 0;
  virtual uint64_t weight_bytes() const = 0;  // bf16 matrix bytes read per step (lm_head once)
  virtual const char* backend() const = 0;    // "avx512", "avx2" or "cuda"
  // The phase profile where the runner keeps one (the CPU runner); called between steps only.
  virtual bool profile(RunnerProfile* out) const {
    (void)out;
    return false;
  }
};

// The checks every runner makes before touching the cache (token ids, block table lengths, block ids).
Status validate_batch(const ModelConfig& cfg, int num_blocks, int block_size, const std::vector<SeqSlice>& batch);

}  // namespace ee
