// The model runner: the one place that touches tensors. It runs one forward step over a batch of
// sequence slices (prefill chunks and decodes mixed), writing their K/V into the paged cache and
// returning logits for the rows that asked for them. It knows nothing of scheduling.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "common/aligned_vec.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "cpu/kernels.h"
#include "cpu/qgemm.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/runner.h"
#include "model/weights.h"

namespace ee {

class ModelRunner : public IModelRunner {
 public:
  // precise: the layers' GEMM inputs in two planes (value and residual), else one; lm_head_precise:
  // the same for the LM head alone (--lm-head-planes; accuracy per choice: bench/README.md, "LM head
  // planes"); int8: the int8 kernels when the weights are int8, else nullptr.
  ModelRunner(ModelConfig cfg, std::unique_ptr<ModelWeights> weights, std::unique_ptr<KvCache> kv, ThreadPool* pool,
              const cpu::Kernels* kernels, bool precise, const cpu::Int8Kernels* int8, bool lm_head_precise);

  Status forward(const std::vector<SeqSlice>& batch, std::vector<float>& logits) override;
  Status copy_blocks(const std::vector<std::pair<int, int>>& src_dst) override;
  void reserve(int max_tokens) override;
  const ModelConfig& config() const override { return cfg_; }
  int num_blocks() const override { return kv_->num_blocks(); }
  int block_size() const override { return kv_->block_size(); }
  uint64_t kv_bytes() const override { return kv_->bytes(); }
  uint64_t weight_bytes() const override { return w_->matrix_bytes; }
  const char* backend() const override { return k_->isa; }

  const ModelWeights& weights() const { return *w_; }
  KvCache& kv() { return *kv_; }
  const cpu::Kernels& kernels() const { return *k_; }
  const cpu::Int8Kernels* int8_kernels() const { return k8_; }
  bool precise() const { return precise_; }
  bool lm_head_precise() const { return lm_head_precise_; }

  using Profile = RunnerProfile;
  Profile profile() const;
  bool profile(RunnerProfile* out) const override {
    *out = profile();
    return true;
  }

 private:
  // y[:, 0:N] = x · W^T for each (W, N, y) sharing the same input x [T, K]; W is bf16 (w) or int8
  // (q), the same kind for every output of one call.
  struct MatOut {
    const bf16_t* w;
    const cpu::QMatrix* q;
    int n;
    float* y;
  };
  // precise: the input in two planes (value and residual), else one. `produce(m0, m1)`, where given,
  // writes rows [m0, m1) of x first, in the same task that prepares them (a norm or an activation
  // function fused with the preparation: one pass over the rows on one core instead of two regions).
  void gemm(const float* x, int T, int K, bool precise, std::initializer_list<MatOut> outs,
            const std::function<void(int, int)>& produce = nullptr);
  void rows(int T, int per_task, const std::function<void(int, int)>& fn);  // fn(row_begin, row_end)
  void attention(int layer, const std::vector<SeqSlice>& batch, const std::vector<int>& row0);
  void grow_scratch(int T);  // the [T, ...] step buffers below, for a step of T rows
  size_t act_bytes(int T, int K, bool int8, bool precise) const;  // the prepared GEMM input of [T, K]

  ModelConfig cfg_;
  std::unique_ptr<ModelWeights> w_;
  std::unique_ptr<KvCache> kv_;
  ThreadPool* pool_;
  const cpu::Kernels* k_;
  bool precise_;
  const cpu::Int8Kernels* k8_;
  bool lm_head_precise_;  // int8 GEMMs (weights quantized at load), else nullptr
  // Step scratch, grown on demand and reused: x/xn [T, hidden], q/attn [T, q_dim], k/v [T, kv_dim],
  // gate/up [T, intermediate], act (prepared GEMM input), per-worker attention scores.
  AlignedVec<float> x_, xn_, q_, k_new_, v_new_, attn_, gate_, up_, tmp_;
  // RoPE cos/sin per row [T, head_dim] (rope_angles), computed once per step for all layers: per
  // layer they were a visible share of a prefill (128 libm calls in double per row).
  AlignedVec<float> rope_cs_;
  AlignedVec<uint8_t> act_;
  std::vector<std::vector<float>> scores_;
  Profile prof_;
  struct alignas(64) Busy {  // per worker: task time (ms) in GEMMs and attention
    double gemm = 0, attention = 0;
  };
  std::vector<Busy> busy_;
};

}  // namespace ee
