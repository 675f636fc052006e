#include "engine/kv_manager.h"

#include "common/assert.h"

namespace ee {

KvManager::KvManager(int num_blocks, int block_size, bool prefix_caching)
    : pool_(num_blocks), bs_(block_size), caching_(prefix_caching) {}

// NOTE: 64-bit hash chain (FNV-1a over the parent hash and the block's token ids, then a murmur
// finaliser). A collision would need two different prefixes with equal 64-bit hashes; like vLLM's
// default we accept that risk rather than store and compare every cached block's tokens.
uint64_t KvManager::block_hash(const Sequence& s_const, int i) {
  auto& s = const_cast<Sequence&>(s_const);
  while (int(s.block_hashes.size()) <= i) {
    const int b = int(s.block_hashes.size());
    uint64_t h = b == 0 ? 0x6a09e667f3bcc908ull : s.block_hashes[size_t(b - 1)];
    for (int t = b * bs_; t < (b + 1) * bs_; ++t) {
      h ^= uint64_t(uint32_t(s.tokens[size_t(t)]));
      h *= 0x100000001b3ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    s.block_hashes.push_back(h);
  }
  return s.block_hashes[size_t(i)];
}

int KvManager::match_prefix(Sequence& s) {
  ENGINE_ASSERT(s.block_table.empty() && s.num_computed == 0);
  if (!caching_ || s.wants_prompt_rows()) {  // prompt logprobs need every prompt row computed
    if (s.prefix_hit < 0) s.prefix_hit = 0;
    return 0;
  }
  queries += uint64_t(s.num_tokens());
  const int full = (s.num_tokens() - 1) / bs_;
  int found = 0;
  for (int i = 0; i < full; ++i) {
    const int b = pool_.cached(block_hash(s, i));
    if (b < 0) break;
    pool_.acquire(b);
    s.block_table.push_back(b);
    ++found;
  }
  s.num_computed = found * bs_;
  s.blocks_committed = found;
  if (s.prefix_hit < 0) s.prefix_hit = found * bs_;
  hits += uint64_t(found) * uint64_t(bs_);
  return found * bs_;
}

bool KvManager::allocate(Sequence& s, int n, std::vector<BlockCopy>& copies) {
  const int have = int(s.block_table.size());
  const int need = (s.num_computed + n + bs_ - 1) / bs_;
  const int first = s.num_computed / bs_;  // first block written this step
  const bool cow = s.num_computed % bs_ != 0 && first < have && pool_.ref_count(s.block_table[size_t(first)]) > 1;
  const int extra = std::max(0, need - have) + (cow ? 1 : 0);
  if (pool_.num_free() < extra) return false;
  if (cow) {
    const int src = s.block_table[size_t(first)];
    const int dst = pool_.allocate();
    copies.push_back({src, dst});
    pool_.decref(src);
    s.block_table[size_t(first)] = dst;
  }
  for (int i = have; i < need; ++i) s.block_table.push_back(pool_.allocate());
  return true;
}

void KvManager::commit(Sequence& s) {
  if (!caching_) return;
  const int full = s.num_computed / bs_;
  for (int i = s.blocks_committed; i < full; ++i) pool_.set_hash(s.block_table[size_t(i)], block_hash(s, i));
  s.blocks_committed = std::max(s.blocks_committed, full);
}

void KvManager::free(Sequence& s) {
  for (auto it = s.block_table.rbegin(); it != s.block_table.rend(); ++it) pool_.decref(*it);
  s.block_table.clear();
  s.blocks_committed = 0;
}

void KvManager::fork(const Sequence& parent, Sequence& child) {
  for (int b : parent.block_table) pool_.incref(b);
  child.block_table = parent.block_table;
  child.block_hashes = parent.block_hashes;
  child.blocks_committed = parent.blocks_committed;
  child.num_computed = parent.num_computed;
}

}  // namespace ee
