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
  std::vector<float> processed;  // the row after bias and penalties
  std::vector<float> x;
  std::vector<int32_t> idx;
};

class Sampler {
 public:
  Sampler(const cpu::Kernels* k, int vocab) : k_(k), vocab_(vocab) {}
  // NOTE: logprobs are those of the raw model output (before penalties, temperature and
  // truncation), as vLLM returns by default.
  SampleOut sample(const float* logits, Sequence& s, SamplerScratch& scratch) const;
  // Records a new output token in the sequence's penalty state.
  static void note_token(Sequence& s, int32_t token, int vocab);

 private:
  int32_t choose(float* x, const RequestSpec& r, Rng& rng, SamplerScratch& scratch) const;

  const cpu::Kernels* k_;
  int vocab_;
};

}  // namespace ee
