// Paged KV storage, per layer, fp32 (default) or bf16 (--kv-cache-dtype bfloat16):
//   K: [num_blocks, num_kv_heads, head_dim, block_size]  (transposed inside a block: attention
//      scores are computed for a whole vector of keys at once, with no horizontal sums)
//   V: [num_blocks, num_kv_heads, block_size, head_dim]
// Head-major inside a block so one head's keys/values are one contiguous run.
// Which blocks a sequence owns is the block pool's business (block tables); this only stores.
#pragma once
#include <cstddef>
#include <cstdint>

#include "model/config.h"

namespace ee {

class KvCache {
 public:
  KvCache(const ModelConfig& cfg, int num_blocks, int block_size, bool bf16 = false);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  bool ok() const { return base_ != nullptr; }
  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  bool bf16() const { return elem_ == 2; }
  size_t elem_bytes() const { return elem_; }
  size_t bytes() const { return bytes_; }
  bool locked() const { return locked_; }  // mlock'ed (else resident by touch; see the constructor)
  // Bytes one block takes across all layers (K and V).
  static size_t block_bytes(const ModelConfig& cfg, int block_size, bool bf16 = false) {
    return size_t(cfg.num_layers) * 2 * size_t(cfg.num_kv_heads) * size_t(block_size) * size_t(cfg.head_dim) *
           (bf16 ? 2 : 4);
  }

  // One layer's K or V, elements of elem_bytes() (float or bf16_t).
  void* k(int layer) { return base_ + size_t(layer) * 2 * layer_bytes_; }
  void* v(int layer) { return base_ + (size_t(layer) * 2 + 1) * layer_bytes_; }
  // Element offset of (block, kv_head) inside one layer's K or V: a [head_dim][block_size] K^T
  // tile, or a [block_size][head_dim] V tile.
  size_t tile(int block, int kv_head) const {
    return (size_t(block) * num_kv_heads_ + size_t(kv_head)) * size_t(block_size_) * head_dim_;
  }

 private:
  int num_blocks_, block_size_, num_kv_heads_, head_dim_;
  size_t elem_ = 4;
  size_t layer_bytes_ = 0;
  size_t bytes_ = 0;
  uint8_t* base_ = nullptr;
  bool locked_ = false;
};

}  // namespace ee
