#include "model/kv_cache.h"

#include <sys/mman.h>
#include <unistd.h>

namespace ee {

KvCache::KvCache(const ModelConfig& cfg, int num_blocks, int block_size, bool bf16)
    : num_blocks_(num_blocks), block_size_(block_size), num_kv_heads_(cfg.num_kv_heads), head_dim_(cfg.head_dim),
      elem_(bf16 ? 2 : 4) {
  layer_bytes_ = size_t(num_blocks) * size_t(cfg.num_kv_heads) * size_t(block_size) * size_t(cfg.head_dim) * elem_;
  bytes_ = layer_bytes_ * 2 * size_t(cfg.num_layers);
  if (bytes_ == 0) return;
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, bytes_, MADV_HUGEPAGE);
  base_ = static_cast<uint8_t*>(p);
  // The whole pool is made resident now, at load, so that the process's memory at /ready is what it
  // will use: lazily zero-filled pages were faulted in under load instead, and a container's memory
  // limit was met at peak traffic (an OOM kill) rather than at start (a clear error). Locked when the
  // process may (RLIMIT_MEMLOCK / CAP_IPC_LOCK: never swapped out), else each page is written once.
  locked_ = mlock(p, bytes_) == 0;
  if (!locked_) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    for (size_t off = 0; off < bytes_; off += page) static_cast<volatile uint8_t*>(p)[off] = 0;
  }
}

KvCache::~KvCache() {
  if (base_) munmap(base_, bytes_);
}

}  // namespace ee
