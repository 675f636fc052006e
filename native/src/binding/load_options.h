// Reads loadModel()'s options object (built by src/sidecar/model/load.ts) into native structs.
// Type errors here are programming errors in the TS loader and surface as JS TypeErrors.
#pragma once
#include <napi.h>

#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace ee {

struct LoadOptions {
  ModelConfig config;
  std::vector<TensorSource> tensors;
  int threads = 0;  // 0: all cores
  int kv_blocks = 0;
  // Sizing: no defaults here; the binding requires them from the TS plan (src/sidecar/engine/plan.ts).
  int block_size = 0;
  std::string isa;                    // "", "amx", "avx512", "avx2"
  std::string quantization = "none";  // or "int8": weights quantized at load (CPU only)
  bool lm_head_int8 = true;           // with int8: the LM head too (else it stays bf16)
  bool precise = true;
  // CPU: the LM head GEMM's activation planes: -1 auto (one for an int8 LM head, else as precise), 0 one
  // plane, 1 two (--lm-head-planes).
  int lm_head_precise = -1;
  // "cpu" or "cuda" (the TS loader resolves "auto"); the cuda_* fields only apply to "cuda".
  std::string device = "cpu";
  std::string cuda_library;
  float gpu_memory_utilization = 0.9f;
  bool enforce_eager = false;
  bool capture_graphs = false;
  std::string kv_cache_dtype = "float32";  // or "bfloat16"
  int max_model_len = 0;
  int max_num_seqs = 0;
  int max_batched_tokens = 0;
};

LoadOptions parse_load_options(const Napi::Object& o);

// o[k] when it is a number, else dflt (shared by every options reader of the binding).
int get_int(const Napi::Object& o, const char* k, int dflt);
float get_float(const Napi::Object& o, const char* k, float dflt);

}  // namespace ee
