#include "engine/block_pool.h"

#include "common/assert.h"

namespace ee {

BlockPool::BlockPool(int num_blocks)
    : ref_(size_t(num_blocks), 0), prev_(size_t(num_blocks), -1), next_(size_t(num_blocks), -1),
      hash_(size_t(num_blocks), 0), has_hash_(size_t(num_blocks), 0) {
  for (int b = 0; b < num_blocks; ++b) push_tail(b);
}

void BlockPool::unlink(int b) {
  const int p = prev_[size_t(b)], n = next_[size_t(b)];
  if (p >= 0) next_[size_t(p)] = n;
  else head_ = n;
  if (n >= 0) prev_[size_t(n)] = p;
  else tail_ = p;
  prev_[size_t(b)] = next_[size_t(b)] = -1;
  --free_count_;
}

void BlockPool::push_tail(int b) {
  prev_[size_t(b)] = tail_;
  next_[size_t(b)] = -1;
  if (tail_ >= 0) next_[size_t(tail_)] = b;
  else head_ = b;
  tail_ = b;
  ++free_count_;
}

void BlockPool::push_head(int b) {
  prev_[size_t(b)] = -1;
  next_[size_t(b)] = head_;
  if (head_ >= 0) prev_[size_t(head_)] = b;
  else tail_ = b;
  head_ = b;
  ++free_count_;
}

int BlockPool::allocate() {
  if (head_ < 0) return -1;
  const int b = head_;
  unlink(b);
  if (has_hash_[size_t(b)]) {  // evict the cached content
    auto it = by_hash_.find(hash_[size_t(b)]);
    if (it != by_hash_.end() && it->second == b) by_hash_.erase(it);
    has_hash_[size_t(b)] = 0;
  }
  ref_[size_t(b)] = 1;
  return b;
}

void BlockPool::incref(int b) {
  ENGINE_ASSERT(ref_[size_t(b)] > 0);
  ++ref_[size_t(b)];
}

void BlockPool::decref(int b) {
  ENGINE_ASSERT(ref_[size_t(b)] > 0);
  if (--ref_[size_t(b)] == 0) {
    if (has_hash_[size_t(b)]) push_tail(b);
    else push_head(b);
  }
}

int BlockPool::cached(uint64_t hash) const {
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? -1 : it->second;
}

void BlockPool::set_hash(int b, uint64_t hash) {
  ENGINE_ASSERT(ref_[size_t(b)] > 0);
  if (has_hash_[size_t(b)] || by_hash_.count(hash)) return;
  hash_[size_t(b)] = hash;
  has_hash_[size_t(b)] = 1;
  by_hash_[hash] = b;
}

void BlockPool::acquire(int b) {
  if (ref_[size_t(b)] == 0) unlink(b);
  ++ref_[size_t(b)];
}

std::vector<int> BlockPool::free_order() const {
  std::vector<int> out;
  for (int b = head_; b >= 0; b = next_[size_t(b)]) out.push_back(b);
  return out;
}

}  // namespace ee
