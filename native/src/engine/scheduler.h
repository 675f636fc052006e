// Continuous batching with a token budget per step (vLLM v1's rule: requests are counters).
// Running sequences first, in arrival order: each gets min(remaining tokens, budget left) new
// tokens (a decode needs 1, a prefill takes what is left: chunked prefill mixes with decodes).
// When blocks run out, the most recently arrived running sequence is preempted by recompute (its
// blocks are freed, num_computed returns to 0, it goes back to the head of the queue; its full
// blocks usually stay in the prefix cache). Then waiting sequences, strictly first-come-first-
// served: the head waits for room, so a long request is never starved by short ones; between
// requests, admission is fair (fair_share.h: slots, shares, and the preemption that enforces them).
// Prefill batching (prefill_batch > 1; TGI's max_waiting_tokens / waiting_served_ratio idea): while
// at least a quarter of max_num_seqs sequences decode, new prompts wait until prefill_batch of them
// are queued or the oldest has waited prefill_max_wait steps. A step that prefills costs far more
// than a decode step on a GPU whatever the number of prompts in it (the longest prompt's attention
// chain, ~200 graph nodes either way), so fewer such steps carrying more prompts raise throughput
// at the price of a few steps of TTFT.
#pragma once
#include <deque>
#include <vector>

#include "engine/fair_share.h"
#include "engine/kv_manager.h"
#include "engine/sequence.h"

namespace ee {

struct SchedulerConfig {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  int prefill_batch = 1;     // 1: admit new prompts as soon as there is room
  int prefill_max_wait = 8;  // steps
};

struct Scheduled {
  Sequence* seq;
  int n;        // tokens computed this step, from seq->num_computed
  bool sample;  // the step reaches the end of seq->tokens: its last logits row is sampled
};

struct SchedulerOutput {
  std::vector<Scheduled> seqs;
  std::vector<BlockCopy> copies;
  int preempted = 0;       // for memory
  int fair_preempted = 0;  // to seat a request under its share
  int num_tokens = 0;
};

class Scheduler {
 public:
  Scheduler(KvManager& kv, SchedulerConfig cfg) : kv_(kv), cfg_(cfg) {}

  void add(Sequence* s) {
    s->queued_step = step_ + 1;  // the first step that may admit it
    waiting_.push_back(s);
  }
  // Adds a forked choice directly to the running set (it shares its parent's computed prefix).
  void add_running(Sequence* s) { running_.push_back(s); }
  SchedulerOutput schedule();
  // Removes a sequence wherever it is and frees its blocks (finish or abort).
  void remove(Sequence* s);

  const std::deque<Sequence*>& waiting() const { return waiting_; }
  const std::vector<Sequence*>& running() const { return running_; }
  uint64_t preemptions() const { return preemptions_; }
  // Slots held by the running set (fair_share.h); never above max_num_seqs.
  int running_slots() const;

 private:
  void preempt(Sequence* s);
  bool hold_prefills() const;
  void make_room_fairly(SlotLedger& ledger, SchedulerOutput& out);
  void admit(SlotLedger& ledger, int& budget, SchedulerOutput& out);
  // Admits s (queue position it) if its slots and its next chunk's blocks fit; false leaves it waiting.
  bool try_admit(std::deque<Sequence*>::iterator it, SlotLedger& ledger, int& budget, SchedulerOutput& out);

  KvManager& kv_;
  SchedulerConfig cfg_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;
  uint64_t preemptions_ = 0;
  uint64_t step_ = 0;  // schedule() calls
};

}  // namespace ee
