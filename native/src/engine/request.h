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
  // Structured output: the token masks the sidecar's grammar worker writes (src/sidecar/grammar/
  // mask-layout.ts), or null. Layout, int32 words: n `ready` words, then n rows of mask_words words.
  // Row i is choice i's mask for its next token, valid while ready[i] equals that choice's output
  // length (kMaskFailed: the worker gave up on it); bit t % 32 of word t / 32 set = token t allowed.
  // The sidecar keeps the buffer alive until the request's last output.
  int32_t* grammar = nullptr;
  int mask_words = 0;  // ceil(vocab / 32)
  static constexpr int32_t kMaskFailed = -2;

  // True while sequence outputs `num_output` must not end on a stop token.
  bool bans_stops(int num_output) const { return num_output < min_tokens && !stop_token_ids.empty(); }

  // Choice `index`'s ready word and mask row (grammar != null).
  int32_t* mask_ready(int index) const { return grammar + index; }
  const uint32_t* mask_row(int index) const {
    return reinterpret_cast<const uint32_t*>(grammar + n + size_t(index) * size_t(mask_words));
  }

  bool uses_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
};

}  // namespace ee
