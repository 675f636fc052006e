// Token selection for one sequence from one logits row: logit bias, the min_tokens ban on stop ids,
// repetition / frequency / presence penalties, temperature, top-k, top-p, min-p, a draw from the sequence's own random
// stream; plus logprobs. Per-sequence and deterministic: the same row, parameters and stream give
// the same token whatever else is in the batch.
#pragma once
#include <cstdint>
#include <vector>

#include "cpu/kernels.h"
#include "engine/sequence.h"

namespace ee {

struct SampleOut {
  int32_t token = -1;
  float logprob = 0;             // of the chosen token under the raw model distribution
  std::vector<int32_t> top_ids;  // the k most likely tokens of the raw distribution (logprobs = k)
  std::vector<float> top_logprobs;
};

struct SamplerScratch {
  std::vector<float> masked;     // the row with a grammar's disallowed tokens at -inf
  std::vector<float> processed;  // the row after bias and penalties
  std::vector<float> x;
  std::vector<int32_t> idx;
};

class Sampler {
 public:
  Sampler(const cpu::Kernels* k, int vocab) : k_(k), vocab_(vocab) {}
  // NOTE: logprobs are those of the raw model output (before penalties, temperature and
  // truncation), as vLLM returns by default; with a grammar, of the masked output (vLLM applies the
  // bitmask to the logits before its sampler computes logprobs).
  // mask: the grammar's allowed tokens for this token (RequestSpec::mask_row), or null: bit t % 32 of
  // word t / 32; the words cover the vocabulary (ceil(vocab / 32)).
  SampleOut sample(const float* logits, Sequence& s, SamplerScratch& scratch, const uint32_t* mask = nullptr) const;
  // Copies `logits` with every token the mask disallows at -inf.
  static void apply_mask(const float* logits, const uint32_t* mask, int vocab, float* out);
  // Whether the mask allows some token outside `stops` (then min_tokens may ban the stop ids; when a
  // grammar allows nothing but a stop id, the grammar wins: the ban would leave no token).
  static bool allows_non_stop(const uint32_t* mask, int vocab, const std::vector<int32_t>& stops);
  // Records a new output token in the sequence's penalty state.
  static void note_token(Sequence& s, int32_t token, int vocab);

 private:
  int32_t choose(float* x, const RequestSpec& r, Rng& rng, SamplerScratch& scratch) const;

  const cpu::Kernels* k_;
  int vocab_;
};

}  // namespace ee
