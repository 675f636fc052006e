#include "model/kv_cache.h"

#include <sys/mman.h>

namespace ee {

KvCache::KvCache(const ModelConfig& cfg, int num_blocks, int block_size, bool bf16)
    : num_blocks_(num_blocks), block_size_(block_size), num_kv_heads_(cfg.num_kv_heads), head_dim_(cfg.head_dim),
      elem_(bf16 ? 2 : 4) {
  layer_bytes_ = size_t(num_blocks) * size_t(cfg.num_kv_heads) * size_t(block_size) * size_t(cfg.head_dim) * elem_;
  bytes_ = layer_bytes_ * 2 * size_t(cfg.num_layers);
  if (bytes_ == 0) return;
  // Anonymous memory is zero-filled lazily: pages are only touched as blocks are first used.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, bytes_, MADV_HUGEPAGE);
  base_ = static_cast<uint8_t*>(p);
}

KvCache::~KvCache() {
  if (base_) munmap(base_, bytes_);
}

}  // namespace ee
