// The model's tensors, resolved by checkpoint name and checked against the config.
//
// Matrices ([out_features, in_features] in the checkpoint, HF layout) are converted to bf16 if
// needed and repacked once into the kernels' V32 layout (cpu/kernels.h) in owned huge-page
// memory; the mapped file is only read while loading. Norm weights are kept as fp32.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "common/status.h"
#include "model/config.h"
#include "model/mapped_file.h"

namespace ee {

enum class DType { BF16, F16, F32 };

// Where one tensor lives, as found by the TypeScript safetensors reader.
struct TensorSource {
  std::string name;
  std::string path;  // the shard file
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t offset;  // absolute byte offset in the file
  uint64_t nbytes;
};

struct LayerWeights {
  // All matrices packed (V32); shapes are the checkpoint's [out, in].
  const bf16_t* q_proj;         // [num_heads*head_dim, hidden]
  const bf16_t* k_proj;         // [num_kv_heads*head_dim, hidden]
  const bf16_t* v_proj;         // [num_kv_heads*head_dim, hidden]
  const bf16_t* o_proj;         // [hidden, num_heads*head_dim]
  const bf16_t* gate_proj;      // [intermediate, hidden]
  const bf16_t* up_proj;        // [intermediate, hidden]
  const bf16_t* down_proj;      // [hidden, intermediate]
  const float* input_norm;      // [hidden]
  const float* post_attn_norm;  // [hidden]
};

// One huge-page mapping holding every packed matrix back to back.
class WeightArena {
 public:
  explicit WeightArena(size_t bytes);
  ~WeightArena();
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;
  bool ok() const { return base_ != nullptr; }
  size_t size() const { return bytes_; }
  uint8_t* take(size_t bytes);  // next page-aligned region, or nullptr when full

 private:
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0, used_ = 0;
};

class ModelWeights {
 public:
  // Maps the files, checks every tensor's presence, shape, dtype and byte range, and returns the
  // weights or an error naming the file and the problem.
  // packed = false keeps every matrix in the checkpoint's plain row-major [out, in] bf16 layout
  // (what the CUDA runner uploads); true packs them for the CPU kernels.
  static Result<std::unique_ptr<ModelWeights>> load(const ModelConfig& cfg, const std::vector<TensorSource>& tensors,
                                                    bool packed = true);

  const bf16_t* embed_tokens = nullptr;  // [vocab, hidden]
  const bf16_t* lm_head = nullptr;       // [vocab, hidden]; == embed_tokens when tied
  const float* final_norm = nullptr;     // [hidden]
  std::vector<LayerWeights> layers;
  uint64_t matrix_bytes = 0;  // bf16 bytes of all matrices as stored (lm_head once)
  bool packed = true;         // V32 (CPU kernels) or plain [out, in]

 private:
  std::vector<std::unique_ptr<MappedFile>> files_;  // kept mapped only while loading
  std::unique_ptr<WeightArena> arena_;
  std::vector<std::unique_ptr<float[]>> owned_f32_;
  friend class WeightsBuilder;
};

}  // namespace ee
