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
#include "cpu/qgemm.h"
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
  // --quantization int8: the same seven matrices quantized (Q32, cpu/qgemm.h); the bf16 pointers
  // above are then null (the bf16 copies are not kept).
  struct Int8 {
    cpu::QMatrix q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
  } i8;
};

// How matrices are stored: bf16 (V32) or int8 (Q32, quantized at load); the LM head may stay bf16.
struct Quantization {
  bool int8 = false;
  bool lm_head_int8 = true;  // only with int8
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
  // quant: int8 layer matrices (and LM head) for the CPU kernels; only with packed.
  static Result<std::unique_ptr<ModelWeights>> load(const ModelConfig& cfg, const std::vector<TensorSource>& tensors,
                                                    bool packed = true, Quantization quant = {});

  const bf16_t* embed_tokens = nullptr;  // [vocab, hidden]
  const bf16_t* lm_head = nullptr;       // [vocab, hidden]; == embed_tokens when tied; null when int8
  cpu::QMatrix lm_head8;                 // [vocab, hidden] int8 when quant.lm_head_int8
  Quantization quant;
  const float* final_norm = nullptr;  // [hidden]
  std::vector<LayerWeights> layers;
  uint64_t matrix_bytes = 0;  // bytes of all matrices a step reads, as stored (lm_head once; int8 with its scales)
  bool packed = true;         // V32 (CPU kernels) or plain [out, in]

 private:
  std::vector<std::unique_ptr<MappedFile>> files_;  // kept mapped only while loading
  std::unique_ptr<WeightArena> arena_;
  std::vector<std::unique_ptr<float[]>> owned_f32_;
  friend class WeightsBuilder;
};

}  // namespace ee
