#include "model/runner.h"

#include <string>

namespace ee {

Status IModelRunner::forward_argmax(const std::vector<SeqSlice>&, std::vector<int32_t>&) {
  return Status::error("this backend has no device argmax");
}

Status IModelRunner::forward_sample(const std::vector<SeqSlice>&, const SamplingFill&, std::vector<int32_t>&) {
  return Status::error("this backend has no device sampling");
}

Status validate_batch(const ModelConfig& cfg, int num_blocks, int block_size, const std::vector<SeqSlice>& batch) {
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqSlice& s = batch[i];
    if (s.n_tokens <= 0 || s.start_pos < 0) return Status::error("slice " + std::to_string(i) + ": empty or negative");
    for (int t = 0; t < s.n_tokens; ++t)
      if (s.tokens[t] < 0 || s.tokens[t] >= cfg.vocab_size)
        return Status::error("token id " + std::to_string(s.tokens[t]) + " is outside the vocabulary [0, " +
                             std::to_string(cfg.vocab_size) + ")");
    const int need = (s.start_pos + s.n_tokens + block_size - 1) / block_size;
    if (s.n_blocks < need)
      return Status::error("slice " + std::to_string(i) + ": block table has " + std::to_string(s.n_blocks) +
                           " blocks, needs " + std::to_string(need));
    for (int b = 0; b < need; ++b)
      if (s.block_table[b] < 0 || s.block_table[b] >= num_blocks)
        return Status::error("slice " + std::to_string(i) + ": block id " + std::to_string(s.block_table[b]) +
                             " out of range");
  }
  return Status::ok();
}

}  // namespace ee
