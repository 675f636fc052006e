// The CUDA model runner's state, EeCudaModel (opaque behind the C ABI of include/ernie_cuda.h):
// weights and the paged KV cache on the GPU, step buffers, the captured step graphs. One forward
// step per call (prefill chunks and decodes mixed); decode and mixed steps replayed from CUDA
// graphs captured per padded batch size. The runner's files, one concern each:
//   model_create.cu   shape checks, weights upload, KV cache sizing; destruction
//   model_buffers.cu  the step buffers, grown on demand
//   model_run.cu      one forward's kernels and GEMMs (eager, or recorded into a graph)
//   model_graphs.cu   graph plans (padded shapes), captures, the eager fallback
//   model_step.cu     one step: metadata packed and uploaded, graph or eager, results copied back
//   model_api.cu      the C ABI
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ernie_cuda.h"
#include "env_switches.h"
#include "kernels.cuh"
#include "profiler.h"

#define CK(x)                                                                                         \
  do {                                                                                                \
    cudaError_t e_ = (x);                                                                             \
    if (e_ != cudaSuccess) throw std::runtime_error(std::string(#x) + ": " + cudaGetErrorString(e_)); \
  } while (0)
#define CB(x)                                                                                                      \
  do {                                                                                                             \
    cublasStatus_t s_ = (x);                                                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(#x) + ": " + cublasGetStatusString(s_)); \
  } while (0)

using bf16 = __nv_bfloat16;

namespace eec {

template <typename T>
T* dalloc(size_t n) {
  void* p = nullptr;
  if (n == 0) n = 1;
  CK(cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}
template <typename T>
T* halloc(size_t n) {
  void* p = nullptr;
  if (n == 0) n = 1;
  CK(cudaMallocHost(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}

// Serialises, across every model in the process, what must not interleave with a stream capture on
// another thread: graph captures themselves, and the allocations, frees and synchronous copies of
// model creation, buffer growth, copy-on-write pairs and destruction (cudaFree synchronises the
// device, and a capture in flight on another thread does not survive it). Without it, with engines
// created and closed one after another in a process, graphs captured lazily on an engine's step
// thread failed while an earlier engine's model was freed by the JS garbage collector (close() did
// not free it then): cuBLAS "failed to launch", then "operation failed due to a previous error
// during capture", failing every request of the step. How often, before and after:
// native/cuda/README.md ("Graph captures and other threads"). Recursive: creation captures its
// graphs.
std::recursive_mutex& api_mutex();

struct Layer {
  bf16* qkv;      // [QD + 2*KVD, H]: q_proj, k_proj, v_proj rows back to back
  bf16* o;        // [H, QD]
  bf16* gate_up;  // [2*I, H]: gate_proj then up_proj
  bf16* down;     // [H, I]
  float* in_norm;
  float* post_norm;
};

}  // namespace eec

struct EeCudaModel {
  const eec::EnvSwitches env = eec::read_env_switches();  // first: members below read it
  EeCudaModelDesc d{};
  int H = 0, I = 0, V = 0, L = 0, QD = 0, KVD = 0, QKVW = 0, bs = 0, num_blocks = 0;
  cudaStream_t st = nullptr;
  // A sampled step's grammar masks go up on their own stream (the forward may still be running on st
  // when the last row arrives); st's sampling waits for masks_up.
  cudaStream_t st_masks = nullptr;
  cudaEvent_t masks_up = nullptr;
  cublasHandle_t blas = nullptr;
  void* blas_ws = nullptr;
  std::vector<void*> owned;  // device allocations freed on destroy
  bf16* embed = nullptr;
  bf16* lm_head = nullptr;
  float* final_norm = nullptr;
  float* inv_freq = nullptr;
  // With one activation plane, GEMMs (cuBLAS's and our GEMV) write bf16 (what bf16 engines compute:
  // HF rounds every projection's output to bf16) instead of fp32, halving the bytes each GEMM writes
  // and the next kernel reads (ERNIE_CUDA_BF16_OUT=0: fp32 outputs). The LM head always writes fp32.
  bool bf16_out = false;
  std::vector<eec::Layer> layers;
  // KV cache, per layer K then V: [num_blocks + 1, block_size, kv_heads, head_dim], fp32 or bf16
  // (kv_bf16). Block num_blocks is a scratch block that padded graph rows write to.
  char* kv = nullptr;
  size_t layer_bytes = 0;
  bool kv_bf16 = false;
  int planes = 2;  // activation planes: 2 precise (hi + lo bf16), 1 plain bf16
  // With a bf16 cache and one plane, steps of 128+ decode rows read each (row, KV head) whole in one
  // block (attn_decode_walk_kernel) instead of key partitions and a combine kernel.
  // (ERNIE_CUDA_DECODE_WALK=0: the partitioned kernels at every size.)
  bool walk = false;
  // GEMMs of at most gemv_max_m rows go to our GEMV, the rest to cuBLAS: on whole decode steps the
  // GEMV wins clearly at 1-4 rows (cuBLAS's small-M kernels read the weights at a fraction of HBM
  // bandwidth) and loses at 8 and 16 (native/cuda/README.md). ERNIE_CUDA_NO_GEMV /
  // ERNIE_CUDA_GEMV_MAX_M move the threshold (env_switches.h).
  int gemv_max_m = env.gemv_max_m;
  uint64_t weight_bytes = 0, kv_bytes = 0;

  // Step buffers (capacities: rows T, logit rows R, attention partials (rows x partitions) RP,
  // block-table ints BT).
  int cap_t = 0, cap_r = 0, cap_bt = 0, cap_rl = 0;
  size_t cap_rp = 0;
  float *x = nullptr, *y = nullptr, *q = nullptr, *part_acc = nullptr, *part_ml = nullptr, *ylog = nullptr;
  bf16* act = nullptr;
  int32_t *meta = nullptr, *meta_h = nullptr, *argmax_d = nullptr, *argmax_h = nullptr, *pairs = nullptr;
  unsigned long long* argmax_keys = nullptr;
  eec::SampleParams *sample_d = nullptr, *sample_h = nullptr;  // [cap_r] per-row sampling parameters
  uint32_t *mask_d = nullptr, *mask_h = nullptr;               // [cap_r, ceil(V / 32)] grammar masks
  std::vector<EeCudaSample> sample_fill;                       // [R] a sampled step's rows, as the caller fills them
  float *logits_d = nullptr, *logits_h = nullptr;
  int cap_pairs = 0;

  // (0 decode / 1 mixed, padded rows, logit rows, output mode) -> the captured step
  std::map<std::array<int, 4>, cudaGraphExec_t> graphs;
  std::set<std::array<int, 4>> no_graph;  // plans whose capture failed: run eagerly (graph_for)
  // ERNIE_CUDA_FAIL_CAPTURES=N (tests only): the next N captures while serving fail on purpose, so
  // that the eager fallback of graph_for is exercised.
  int fail_captures = env.fail_captures;
  uint64_t graph_steps = 0, eager_steps = 0, captures = 0;
  eec::Profiler prof{env};
  std::string shape;  // profile label suffix of the current step ("decode" / "mixed", then a row bucket)

  void* kc(int l) { return kv + size_t(l) * 2 * layer_bytes; }
  void* vc(int l) { return kv + (size_t(l) * 2 + 1) * layer_bytes; }
  // Ints of the metadata of S rows, SR logit rows and bt block-table entries (layout: row_meta).
  static int meta_len(int S, int SR, int bt) { return 6 * S + SR + 2 + bt; }
  int meta_ints() const { return meta_len(cap_t, cap_r, cap_bt); }
  int mask_words() const { return (V + 31) / 32; }
  // The step's metadata, packed for S rows and SR logit rows (S = the graph's batch or the eager
  // step's rows), so that only what the step uses crosses PCIe: [token | pos | slot | bt_off |
  // tile_row | tile_n] x S, out_row x SR, counts x 2, block tables.
  static eec::RowMeta row_meta(const int32_t* b, int S, int SR) {
    return {b, b + S, b + 2 * S, b + 3 * S, b + 4 * S, b + 5 * S, b + 6 * S, b + 6 * S + SR, b + 6 * S + SR + 2};
  }
  eec::RowMeta cur{};  // the current step's (device pointers), set before run() or a capture

  template <typename T>
  T* own(size_t n) {
    T* p = eec::dalloc<T>(n);
    owned.push_back(p);
    return p;
  }
  bf16* upload_bf16(const uint16_t* const* parts, const size_t* counts, int n);
  float* upload_f32(const float* h, size_t n);

  void drop_graphs();
  void free_buffers();
  // Grows the step buffers to at least these capacities (graphs captured on the old ones go).
  // rp: attention partial rows (rows x partitions; 0 when every tile writes its output directly).
  void ensure(int t, int r, size_t rp, int bt, bool want_logits);

  // Row-major out[m, n] = a[m, k] · w[n, k]^T, i.e. column-major out^T = w · a^T; out bf16 when to_bf16
  // (then read as bf16 through the same pointer), else fp32.
  void gemm(const bf16* w, int n, int k, const bf16* a, int m, float* out, bool to_bf16);

  // The whole forward for T rows (metadata already on the device), R logit rows.
  // Attention grids: dec_tiles one-row tiles first (key partitions of part_keys, np of them), then
  // pre_tiles prefill tiles (one partition each); the step's own counts (cur.counts, on the device)
  // may be smaller (graphs).
  // out: what the logit rows become (logits, argmax ids, or, kSample, left in ylog for eec::sample: the
  // step launches that after the forward, once the caller has supplied the rows' parameters and masks).
  enum class Out { kLogits = 0, kArgmax = 1, kSample = 2 };
  void run(int T, int R, int dec_tiles, int pre_tiles, int part_keys, int np, Out mode);
};

namespace eec {

// model_create.cu: fills m from d (throws on a shape the kernels do not support); destroy_model
// frees what create_model allocated, also after it threw.
void create_model(EeCudaModel& m, const EeCudaModelDesc& d);
void destroy_model(EeCudaModel* m);

// model_step.cu: one step of n slices.
// fill: writes the sampling entries (one per logit row) once the forward is queued, or null (argmax
// when argmax_out is given).
void forward(EeCudaModel& m, const EeCudaSlice* s, int n, float* logits, int32_t* argmax_out, EeCudaSampleFill fill,
             void* fill_ctx);

}  // namespace eec
