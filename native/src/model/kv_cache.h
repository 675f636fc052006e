// Paged KV storage: per layer, K and V as [num_blocks, num_kv_heads, block_size, head_dim] fp32.
// Head-major inside a block so one head's block_size keys are one contiguous run for attention.
// Which blocks a sequence owns is the block pool's business (block tables); this only stores.
#pragma once
#include <cstddef>
#include <cstdint>

#include "model/config.h"

namespace ee {

class KvCache {
 public:
  KvCache(const ModelConfig& cfg, int num_blocks, int block_size);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  bool ok() const { return base_ != nullptr; }
  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  size_t bytes() const { return bytes_; }
  // Bytes one block takes across all layers (K and V).
  static size_t block_bytes(const ModelConfig& cfg, int block_size) {
    return size_t(cfg.num_layers) * 2 * size_t(cfg.num_kv_heads) * size_t(block_size) * size_t(cfg.head_dim) *
           sizeof(float);
  }

  float* k(int layer) { return base_ + size_t(layer) * 2 * layer_floats_; }
  float* v(int layer) { return k(layer) + layer_floats_; }
  // Element offset of (block, kv_head, slot) inside one layer's K or V.
  size_t offset(int block, int kv_head, int slot) const {
    return ((size_t(block) * num_kv_heads_ + size_t(kv_head)) * block_size_ + size_t(slot)) * head_dim_;
  }

 private:
  int num_blocks_, block_size_, num_kv_heads_, head_dim_;
  size_t layer_floats_ = 0;
  size_t bytes_ = 0;
  float* base_ = nullptr;
};

}  // namespace ee
