// One sequence (one choice of a request) as the scheduler and sampler see it: counters, not
// phases. tokens = prompt + outputs so far; num_computed = how many of them have K/V in the cache.
// A step computes tokens [num_computed, num_computed + n); when that reaches tokens.size() the
// step's last logits row is sampled. Prefill, chunked prefill, prefix-cache hits, recompute after
// preemption and decode are all this one rule.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/request.h"
#include "engine/rng.h"

namespace ee {

enum class Finish : int { None = 0, Stop = 1, Length = 2, Abort = 3, Error = 4 };

struct Sequence {
  std::shared_ptr<const RequestSpec> req;
  int index = 0;  // choice index
  std::vector<int32_t> tokens;
  int prompt_len = 0;
  int num_computed = 0;
  std::vector<int> block_table;
  std::vector<uint64_t> block_hashes;  // hash chain of the full blocks of `tokens`, as far as known
  int blocks_committed = 0;            // leading full blocks registered in the prefix cache
  int prefix_hit = -1;                 // prompt tokens found in the prefix cache on first admission
  Rng rng;
  uint64_t arrival = 0;      // FCFS order
  uint64_t queued_step = 0;  // the scheduler step it joined the waiting queue (0: preempted, admit first)
  bool forked = false;       // choices 1..n-1 exist (set on choice 0 once its prefill is sampled)
  // Its client has a full buffer (Engine::pause): never put in a step's batch, its KV blocks kept.
  bool paused = false;
  Finish finish = Finish::None;
  int prompt_lp_next = 1;  // the next prompt index whose prompt logprob is due (choice 0 only)
  int preemptions = 0;     // times this sequence was preempted (recomputed)
  // Penalty state, only kept when the request uses penalties: counts of generated tokens and
  // presence over prompt + output.
  std::unordered_map<int32_t, int> output_counts;
  std::vector<uint8_t> seen;

  int num_tokens() const { return int(tokens.size()); }
  int num_output() const { return int(tokens.size()) - prompt_len; }
  // This sequence still owes prompt logprobs: its prefill must compute every prompt row's logits.
  bool wants_prompt_rows() const { return req->prompt_logprobs >= 0 && index == 0 && prompt_lp_next < prompt_len; }
};

}  // namespace ee
