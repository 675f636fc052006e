// The model's tensors, resolved by checkpoint name and checked against the config.
//
// Matrices are bf16 [out_features, in_features] row-major (HF layout), used in place from the
// memory-mapped file when the checkpoint is bf16, else converted once into owned bf16 memory.
// Norm weights are small and kept as fp32.
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
  std::string path;   // the shard file
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t offset;    // absolute byte offset in the file
  uint64_t nbytes;
};

struct LayerWeights {
  const bf16_t* q_proj;     // [num_heads*head_dim, hidden]
  const bf16_t* k_proj;     // [num_kv_heads*head_dim, hidden]
  const bf16_t* v_proj;     // [num_kv_heads*head_dim, hidden]
  const bf16_t* o_proj;     // [hidden, num_heads*head_dim]
  const bf16_t* gate_proj;  // [intermediate, hidden]
  const bf16_t* up_proj;    // [intermediate, hidden]
  const bf16_t* down_proj;  // [hidden, intermediate]
  const float* input_norm;  // [hidden]
  const float* post_attn_norm;  // [hidden]
};

class ModelWeights {
 public:
  // Maps the files, checks every tensor's presence, shape, dtype and byte range, and returns the
  // weights or an error naming the file and the problem. copy_to_anon: copy bf16 matrices into
  // anonymous (huge-page) memory instead of using the page cache mapping (faster streaming).
  static Result<std::unique_ptr<ModelWeights>> load(const ModelConfig& cfg,
                                                     const std::vector<TensorSource>& tensors,
                                                     bool copy_to_anon);

  const bf16_t* embed_tokens = nullptr;  // [vocab, hidden]
  const bf16_t* lm_head = nullptr;       // [vocab, hidden]; == embed_tokens when tied
  const float* final_norm = nullptr;     // [hidden]
  std::vector<LayerWeights> layers;
  uint64_t matrix_bytes = 0;             // bf16 bytes of all matrices (lm_head once)

 private:
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::unique_ptr<uint16_t[], void (*)(uint16_t*)>> owned_bf16_;
  std::vector<std::unique_ptr<float[]>> owned_f32_;
  friend class WeightsBuilder;
};

}  // namespace ee
