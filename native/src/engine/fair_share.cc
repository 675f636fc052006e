#include "engine/fair_share.h"

#include <algorithm>
#include <unordered_set>

namespace ee {

SlotLedger tally(const std::vector<Sequence*>& running, const std::deque<Sequence*>& waiting, int max_num_seqs) {
  SlotLedger l;
  std::unordered_set<uint32_t> present;
  for (const Sequence* s : running) {
    l.add(*s, 1);
    present.insert(s->req->id);
  }
  for (const Sequence* s : waiting) present.insert(s->req->id);
  l.share = std::max(1, max_num_seqs / std::max(1, int(present.size())));
  return l;
}

Sequence* fair_victim(const std::vector<Sequence*>& running, const SlotLedger& l) {
  // Ties go to the higher id (the later arrival: ids are handed out in order), so the choice does
  // not depend on the map's iteration order.
  bool found = false;
  uint32_t top = 0;
  int most = 0;
  for (const auto& [id, held] : l.held)
    if (held > l.share && (!found || held > most || (held == most && id > top))) {
      found = true;
      top = id;
      most = held;
    }
  if (!found) return nullptr;
  for (auto it = running.rbegin(); it != running.rend(); ++it) {
    Sequence* s = *it;
    if (s->req->id == top && seq_slots(*s) == 1) return most - 1 >= l.share ? s : nullptr;
  }
  return nullptr;
}

}  // namespace ee
