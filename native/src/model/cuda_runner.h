// The CUDA backend as seen from the addon: libernie_cuda.so (native/cuda/) is dlopen()ed at run
// time, so the addon never links CUDA and a CPU-only install never needs it. The runner loads the
// checkpoint's matrices in their plain [out, in] bf16 layout on the host, hands them to the
// library (which uploads them and sizes the KV cache on the GPU), and drops the host copy.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/runner.h"
#include "model/weights.h"

namespace ee {

struct CudaOptions {
  std::string library;  // path of libernie_cuda.so
  int num_blocks = 0;   // 0: from gpu_memory_utilization
  // Sizing: copied from LoadOptions (binding/load_options.h), which takes them from the TS plan.
  int block_size = 0;
  float gpu_memory_utilization = 0.9f;
  int max_model_len = 0;
  int max_num_seqs = 0;
  int max_batched_tokens = 0;
  bool enforce_eager = false;
  int device = 0;
  bool precise = true;          // GEMM inputs as hi + lo bf16 planes (fp32-grade); false: plain bf16 activations
  bool kv_bf16 = false;         // KV cache in bf16 instead of fp32
  bool capture_graphs = false;  // capture every CUDA graph while loading (the sidecar's startup)
};

struct CudaProbe {
  bool available = false;
  int devices = 0;
  std::string reason;  // why not, when unavailable
};

// Whether the library loads and sees a GPU (never throws; safe on machines without CUDA).
CudaProbe probe_cuda(const std::string& library);

Result<std::unique_ptr<IModelRunner>> make_cuda_runner(const ModelConfig& cfg, const std::vector<TensorSource>& tensors,
                                                       const CudaOptions& opts);

// Graph-replayed and eager steps and graphs captured since load (for tests and the benchmark);
// false if not CUDA.
bool cuda_graph_stats(IModelRunner& r, uint64_t* graph_steps, uint64_t* eager_steps, uint64_t* graph_captures,
                      std::string* device_name, uint64_t* gpu_bytes_used);

}  // namespace ee
