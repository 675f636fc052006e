// A generation request as the engine receives it (token ids and numbers only; text, templates
// and stop strings live in TypeScript).
#pragma once
#include <cstdint>
#include <vector>

namespace ee {

struct RequestSpec {
  uint32_t id = 0;
  std::vector<int32_t> prompt;
  int max_tokens = 16;  // 0: prefill only (prompt logprobs), nothing sampled
  int n = 1;
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  bool has_seed = false;
  uint64_t seed = 0;
  std::vector<int32_t> logit_bias_ids;
  std::vector<float> logit_bias_values;
  std::vector<int32_t> stop_token_ids;
  // vLLM's min_tokens: while a sequence has fewer outputs than this, every stop token id (eos
  // included) is banned from sampling and none ends it.
  int min_tokens = 0;
  int logprobs = -1;  // -1: none; k >= 0: chosen + top-k
  // -1: none; k >= 0: every prompt token's logprob (from the 2nd on), its rank and the top-k, computed
  // in the prefill (which then skips the prefix cache: every position's logits are needed).
  int prompt_logprobs = -1;

  // True while sequence outputs `num_output` must not end on a stop token.
  bool bans_stops(int num_output) const { return num_output < min_tokens && !stop_token_ids.empty(); }

  bool uses_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
};

}  // namespace ee
