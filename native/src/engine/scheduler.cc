#include "engine/scheduler.h"

#include <algorithm>

#include "common/assert.h"

namespace ee {

void Scheduler::preempt(Sequence* s) {
  kv_.free(*s);
  s->num_computed = 0;
  ++s->preemptions;
  s->queued_step = 0;  // never held back by prefill batching
  waiting_.push_front(s);
  ++preemptions_;
}

bool Scheduler::hold_prefills() const {
  if (cfg_.prefill_batch <= 1 || waiting_.empty() || int(running_.size()) * 4 < cfg_.max_num_seqs) return false;
  const Sequence* head = waiting_.front();
  if (head->queued_step == 0 || head->num_computed > 0) return false;  // preempted, or a prompt in progress
  return int(waiting_.size()) < cfg_.prefill_batch && step_ - head->queued_step < uint64_t(cfg_.prefill_max_wait);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  ++step_;
  int budget = cfg_.max_num_batched_tokens;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* s = running_[i];
    const int n = std::min(s->num_tokens() - s->num_computed, budget);
    ENGINE_ASSERT(n > 0);
    bool ok = false;
    while (!(ok = kv_.allocate(*s, n, out.copies))) {
      Sequence* victim = running_.back();  // latest arrival: lowest priority
      running_.pop_back();
      preempt(victim);
      ++out.preempted;
      if (victim == s) break;
    }
    if (!ok) break;  // s itself was preempted: everything after it already was
    out.seqs.push_back({s, n, s->num_computed + n == s->num_tokens()});
    budget -= n;
    ++i;
  }
  // No new admissions in a step that had to preempt (the pool is under pressure), nor while new
  // prompts are held back to be prefilled together.
  const bool hold = hold_prefills();
  while (!hold && out.preempted == 0 && !waiting_.empty() && budget > 0 && int(running_.size()) < cfg_.max_num_seqs) {
    Sequence* s = waiting_.front();
    if (s->block_table.empty() && s->num_computed == 0) kv_.match_prefix(*s);
    const int n = std::min(s->num_tokens() - s->num_computed, budget);
    if (!kv_.allocate(*s, n, out.copies)) {  // FCFS: the head waits for room,
      kv_.free(*s);                          // without pinning its prefix-cache hits meanwhile
      s->num_computed = 0;
      break;
    }
    waiting_.pop_front();
    running_.push_back(s);
    out.seqs.push_back({s, n, s->num_computed + n == s->num_tokens()});
    budget -= n;
  }
  out.num_tokens = cfg_.max_num_batched_tokens - budget;
  return out;
}

void Scheduler::remove(Sequence* s) {
  auto r = std::find(running_.begin(), running_.end(), s);
  if (r != running_.end()) running_.erase(r);
  auto w = std::find(waiting_.begin(), waiting_.end(), s);
  if (w != waiting_.end()) waiting_.erase(w);
  kv_.free(*s);
}

}  // namespace ee
