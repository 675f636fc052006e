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
  int threads = 0;        // 0: all cores
  int kv_blocks = 0;
  int block_size = 16;
  std::string isa;        // "", "avx512", "avx2"
  bool precise = true;
};

LoadOptions parse_load_options(const Napi::Object& o);

}  // namespace ee
