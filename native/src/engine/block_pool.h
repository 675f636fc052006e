// The KV block pool: a fixed set of block ids with reference counts and an LRU free queue.
//
// A block with ref count 0 sits in the free queue. It may still hold a cached full block (its hash
// stays registered) until allocate() takes it from the queue's head, which evicts the hash: the
// least recently freed cached block goes first. A block freed with nothing cached joins the head
// instead: it is reused before any cached block is evicted, and the blocks in use stay few and
// recently touched. Why: with every freed block at the tail, allocation cycled through the whole
// pool, so a long CPU run page-faulted (and the kernel zeroed) all of its KV memory (clear_page
// showed in a 32-stream run's profile: native/README.md), and cached prefixes were evicted while
// empty blocks waited behind them. A prefix-cache hit on a free block takes it out of the queue.
// Plain data structure, no tensors: tested with exact ids.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ee {

class BlockPool {
 public:
  explicit BlockPool(int num_blocks);

  int num_blocks() const { return int(ref_.size()); }
  int num_free() const { return free_count_; }  // ref count 0, cached or not

  // Takes the head of the free queue (ref count 1), evicting its cached hash. -1 when none is free.
  int allocate();
  void incref(int block);
  // Drops one reference; at 0 the block joins the free queue: at its tail when it holds a cached
  // full block (evicted last), at its head otherwise (reused first).
  void decref(int block);
  int ref_count(int block) const { return ref_[size_t(block)]; }

  // Prefix cache: the block holding the full block with this hash, or -1.
  int cached(uint64_t hash) const;
  // Registers a full block's hash (no-op if another block already holds it).
  void set_hash(int block, uint64_t hash);
  bool has_hash(int block) const { return has_hash_[size_t(block)] != 0; }
  // A cache hit: one more reference, taking the block out of the free queue if it was free.
  void acquire(int block);

  // Block ids in free-queue order (head first), for tests and stats.
  std::vector<int> free_order() const;

 private:
  void unlink(int block);
  void push_tail(int block);
  void push_head(int block);

  std::vector<int> ref_;
  std::vector<int> prev_, next_;  // doubly linked free queue; -1 = none
  int head_ = -1, tail_ = -1, free_count_ = 0;
  std::vector<uint64_t> hash_;
  std::vector<uint8_t> has_hash_;
  std::unordered_map<uint64_t, int> by_hash_;
};

}  // namespace ee
