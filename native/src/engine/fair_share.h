// Fair admission between requests (a request = one prompt and its n choices: vLLM's sequence group).
// --max-num-seqs counts sequence slots: a running sequence holds one, except choice 0 of a request
// whose n-1 forks are still to come (they are created after its prefill, inside the step, straight
// into the running set), which holds n. So the forks of an admitted request always have their slots,
// and no step can carry more than max_num_seqs sequences.
//
// Policy: max-min fair shares of the slots. share = max(1, max_num_seqs / R), R = requests present
// (running or waiting). Admission takes, in queue order, first the sequences of requests holding
// less than their share (FCFS among them: the first that does not fit waits, and so do those behind
// it), then, when room is left, anyone's (work-conserving: a request alone may use every slot). When
// the first under-share waiter does not fit, the latest running sequences of the request holding the
// most slots are preempted (by recompute, as under memory pressure) while that request keeps at least
// its share. So a request arriving behind a big one is admitted in the next step, whatever the big
// one's length. Why not vLLM's rule: vLLM v1 admits FCFS (or by priority) and turns n>1 into n child
// requests queued together, so a request arriving behind 32 prompts x n=16 waits for hundreds of
// sequences to finish; preemption there only answers memory pressure.
#pragma once
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "engine/sequence.h"

namespace ee {

// Slots a sequence holds while running (see above).
inline int seq_slots(const Sequence& s) { return s.index == 0 && !s.forked ? s.req->n : 1; }

struct SlotLedger {
  std::unordered_map<uint32_t, int> held;  // request id -> slots of its running sequences
  int used = 0;                            // sum of held
  int share = 1;
  int held_by(const Sequence& s) const {
    auto it = held.find(s.req->id);
    return it == held.end() ? 0 : it->second;
  }
  bool under_share(const Sequence& s) const { return held_by(s) < share; }
  void add(const Sequence& s, int sign) {
    held[s.req->id] += sign * seq_slots(s);
    used += sign * seq_slots(s);
  }
};

SlotLedger tally(const std::vector<Sequence*>& running, const std::deque<Sequence*>& waiting, int max_num_seqs);

// The running sequence to preempt so that an under-share request gets room: the latest single-slot
// sequence of the request holding the most slots, if that request keeps at least its share without
// it; nullptr when there is none.
Sequence* fair_victim(const std::vector<Sequence*>& running, const SlotLedger& l);

}  // namespace ee
