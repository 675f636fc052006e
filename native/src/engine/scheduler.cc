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

int Scheduler::running_slots() const {
  int n = 0;
  for (const Sequence* s : running_) n += seq_slots(*s);
  return n;
}

// Preempts over-share requests' latest sequences until the first under-share waiter (queue order)
// would fit: its slots, and blocks for its first chunk (an upper bound: prefix hits need fewer).
void Scheduler::make_room_fairly(SlotLedger& ledger, SchedulerOutput& out) {
  const Sequence* target = nullptr;
  for (const Sequence* w : waiting_)
    if (!w->paused && ledger.under_share(*w)) {  // a paused waiter needs no room until it resumes
      target = w;
      break;
    }
  if (!target) return;
  const int need = seq_slots(*target), bs = kv_.block_size();
  const int blocks = (std::min(target->num_tokens(), cfg_.max_num_batched_tokens) + bs - 1) / bs;
  while (ledger.used + need > cfg_.max_num_seqs || kv_.pool().num_free() < blocks) {
    Sequence* v = fair_victim(running_, ledger);
    if (!v) break;
    running_.erase(std::find(running_.begin(), running_.end(), v));
    ledger.add(*v, -1);
    preempt(v);
    ++out.fair_preempted;
  }
}

bool Scheduler::try_admit(std::deque<Sequence*>::iterator it, SlotLedger& ledger, int& budget, SchedulerOutput& out) {
  Sequence* s = *it;
  if (ledger.used + seq_slots(*s) > cfg_.max_num_seqs) return false;
  if (s->block_table.empty() && s->num_computed == 0) kv_.match_prefix(*s);
  const int n = std::min(s->num_tokens() - s->num_computed, budget);
  if (!kv_.allocate(*s, n, out.copies)) {  // the head waits for room,
    kv_.free(*s);                          // without pinning its prefix-cache hits meanwhile
    s->num_computed = 0;
    return false;
  }
  waiting_.erase(it);
  running_.push_back(s);
  ledger.add(*s, 1);
  out.seqs.push_back({s, n, s->num_computed + n == s->num_tokens()});
  budget -= n;
  return true;
}

// Two passes in queue order (fair_share.h): the under-share requests' sequences, FCFS among them
// (the first that does not fit stops admission); then, if none is left waiting, anyone's. Paused
// waiters (their client's window is full) are passed over, and keep their place in the queue.
void Scheduler::admit(SlotLedger& ledger, int& budget, SchedulerOutput& out) {
  for (int pass = 0; pass < 2; ++pass) {
    for (auto it = waiting_.begin(); it != waiting_.end() && budget > 0;) {
      if ((*it)->paused || (pass == 0 && !ledger.under_share(**it))) {
        ++it;
        continue;
      }
      const size_t at = size_t(it - waiting_.begin());
      if (!try_admit(it, ledger, budget, out)) return;
      it = waiting_.begin() + std::ptrdiff_t(at);
    }
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  ++step_;
  SlotLedger ledger = tally(running_, waiting_, cfg_.max_num_seqs);
  if (!hold_prefills()) make_room_fairly(ledger, out);
  int budget = cfg_.max_num_batched_tokens;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* s = running_[i];
    if (s->paused) {
      ++i;
      continue;
    }
    const int n = std::min(s->num_tokens() - s->num_computed, budget);
    ENGINE_ASSERT(n > 0);
    bool ok = false;
    while (!(ok = kv_.allocate(*s, n, out.copies))) {
      Sequence* victim = running_.back();  // latest arrival: lowest priority
      running_.pop_back();
      ledger.add(*victim, -1);
      preempt(victim);
      ++out.preempted;
      if (victim == s) break;
    }
    if (!ok) break;  // s itself was preempted: everything after it already was
    out.seqs.push_back({s, n, s->num_computed + n == s->num_tokens()});
    budget -= n;
    ++i;
  }
  // No new admissions in a step that had to preempt for memory (the pool is under pressure), nor
  // while new prompts are held back to be prefilled together.
  if (!hold_prefills() && out.preempted == 0) admit(ledger, budget, out);
  // The limit the step buffers (and CUDA graphs) are sized by: the forks this step creates take
  // slots already held by their choice 0, so the running set stays within it after them too.
  ENGINE_ASSERT(ledger.used == running_slots() && ledger.used <= cfg_.max_num_seqs);
  out.num_tokens = cfg_.max_num_batched_tokens - budget;
  return out;
}

bool Scheduler::all_paused() const {
  auto paused = [](const Sequence* s) { return s->paused; };
  return std::all_of(running_.begin(), running_.end(), paused) && std::all_of(waiting_.begin(), waiting_.end(), paused);
}

void Scheduler::remove(Sequence* s) {
  auto r = std::find(running_.begin(), running_.end(), s);
  if (r != running_.end()) running_.erase(r);
  auto w = std::find(waiting_.begin(), waiting_.end(), s);
  if (w != waiting_.end()) waiting_.erase(w);
  kv_.free(*s);
}

}  // namespace ee
