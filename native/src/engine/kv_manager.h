// Per-sequence KV block bookkeeping on top of the block pool: block tables, automatic prefix
// caching (full blocks keyed by a hash chain over their tokens) and copy-on-write of a shared
// partial block after a fork.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/block_pool.h"
#include "engine/sequence.h"

namespace ee {

struct BlockCopy {
  int src, dst;
};

class KvManager {
 public:
  KvManager(int num_blocks, int block_size, bool prefix_caching);

  BlockPool& pool() { return pool_; }
  int block_size() const { return bs_; }

  // For a sequence holding no blocks: acquires the longest run of cached full blocks of its tokens
  // (never the block holding the last token, whose logits must be computed) and advances
  // num_computed past them. Returns the number of tokens found.
  int match_prefix(Sequence& s);
  // Makes room for tokens [num_computed, num_computed + n): new blocks, and a private copy of a
  // shared partial block (appended to `copies`, which the runner applies before the step).
  // On failure nothing changes and false is returned.
  bool allocate(Sequence& s, int n, std::vector<BlockCopy>& copies);
  // Registers the blocks that became full and computed in the prefix cache.
  void commit(Sequence& s);
  // Returns all of the sequence's blocks to the pool, last block first (evicted first).
  void free(Sequence& s);
  // Gives `child` the same blocks as `parent` (one more reference each).
  void fork(const Sequence& parent, Sequence& child);

  uint64_t queries = 0, hits = 0;  // prefix cache, in tokens

 private:
  uint64_t block_hash(const Sequence& s, int i);  // extends s.block_hashes as needed

  BlockPool pool_;
  int bs_;
  bool caching_;
};

}  // namespace ee
