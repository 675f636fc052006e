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
  // Structured output: the request's shared buffer with its grammar worker (src/sidecar/grammar/
  // mask-layout.ts), or null. Int32 words, n choices, W = mask_words:
  //   [0, n)        ready[i]: the output length choice i's mask row is valid for (kMaskFailed: the
  //                 worker gave up on the choice); written by the worker, release
  //   [n, 2n)       posted[i]: choice i's output length after its latest token (post_token)
  //   [2n, 3n)      token[i]: that token; both written by the engine, posted[i] last (release)
  //   [3n + i*W, …) choice i's mask row for its next token: bit t % 32 of word t / 32 set = allowed
  // The sidecar keeps the buffer alive until the request's last output.
  int32_t* grammar = nullptr;
  int mask_words = 0;  // ceil(vocab / 32)
  static constexpr int32_t kMaskFailed = -2;
  static constexpr int kGrammarHeader = 3;  // words per choice before the rows

  // True while sequence outputs `num_output` must not end on a stop token.
  bool bans_stops(int num_output) const { return num_output < min_tokens && !stop_token_ids.empty(); }

  // Choice `index`'s ready word and mask row (grammar != null).
  int32_t* mask_ready(int index) const { return grammar + index; }
  const uint32_t* mask_row(int index) const {
    return reinterpret_cast<const uint32_t*>(grammar + kGrammarHeader * n + size_t(index) * size_t(mask_words));
  }
  // Hands choice `index`'s new token to its grammar worker: the token, then (release) the output
  // length it makes; the worker reads them once woken (grammar_bell.h).
  void post_token(int index, int32_t token, int num_output) const {
    __atomic_store_n(grammar + 2 * n + index, token, __ATOMIC_RELAXED);
    __atomic_store_n(grammar + n + index, int32_t(num_output), __ATOMIC_RELEASE);
  }

  bool uses_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
};

}  // namespace ee
