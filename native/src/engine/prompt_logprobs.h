// Prompt logprobs (vLLM's `prompt_logprobs`; completions `echo` with `logprobs`): for prompt token
// j >= 1, the log-softmax at token[j] of the logits row computed at position j-1, in the same
// prefill that fills the KV cache (the step asks the runner for every row of such a slice). Raw
// model output, like the sampler's logprobs: no bias, penalties or temperature.
#pragma once
#include <cstdint>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/kernels.h"

namespace ee {

struct PromptLogprobs {
  int start = 0;                    // prompt index of the first token covered (>= 1); 0: none
  std::vector<float> logprobs;      // per token: log p(token[j] | tokens[0..j))
  std::vector<int32_t> ranks;       // per token: 1 + the number of tokens with a strictly larger logit
  std::vector<int32_t> top_ids;     // per token, k each: the k most likely tokens (ties: lower id first)
  std::vector<float> top_logprobs;  // per token, k each
  int count() const { return int(logprobs.size()); }
};

// rows: n logits rows of V floats; row i predicts next[i]. k alternatives per row (0: none).
// Rows are spread over the pool's workers.
void compute_prompt_logprobs(const cpu::Kernels* kernels, ThreadPool* pool, const float* rows, int n, int V,
                             const int32_t* next, int k, PromptLogprobs& out);

}  // namespace ee
