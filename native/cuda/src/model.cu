// The CUDA model runner behind the C ABI of include/ernie_cuda.h: weights and the paged KV cache
// on the GPU, one forward step per call (prefill chunks and decodes mixed), decode steps replayed
// from CUDA graphs captured per padded batch size.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ernie_cuda.h"
#include "env_switches.h"
#include "kernels.cuh"
#include "launch.cuh"
#include "profiler.h"

#define CK(x)                                                                                            \
  do {                                                                                                   \
    cudaError_t e_ = (x);                                                                                \
    if (e_ != cudaSuccess) throw std::runtime_error(std::string(#x) + ": " + cudaGetErrorString(e_));    \
  } while (0)
#define CB(x)                                                                                            \
  do {                                                                                                   \
    cublasStatus_t s_ = (x);                                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                     \
      throw std::runtime_error(std::string(#x) + ": " + cublasGetStatusString(s_));                      \
  } while (0)

using bf16 = __nv_bfloat16;

namespace {

constexpr size_t kBlasWorkspace = size_t(64) << 20;
constexpr size_t kHeadroom = size_t(1) << 30;  // cuBLAS, graphs and buffer growth beyond the KV cache

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
// device, and a capture in flight on another thread does not survive it). Measured on the H200:
// with engines created and closed one after another in a process, graphs captured lazily on an
// engine's step thread failed in ~1 of 6 test runs, while an earlier engine's model was freed by
// the JS garbage collector (close() did not free it then): cuBLAS "failed to launch", then
// "operation failed due to a previous error during capture", failing every request of the step.
// With this lock and close() freeing the model: 0 failures in 2,548 runs. Recursive: creation
// captures its graphs.
std::recursive_mutex& api_mutex() {
  static std::recursive_mutex m;
  return m;
}

void set_err(char* err, int errlen, const std::string& msg) {
  if (err && errlen > 0) std::snprintf(err, size_t(errlen), "%s", msg.c_str());
}

struct Layer {
  bf16* qkv;      // [QD + 2*KVD, H]: q_proj, k_proj, v_proj rows back to back
  bf16* o;        // [H, QD]
  bf16* gate_up;  // [2*I, H]: gate_proj then up_proj
  bf16* down;     // [H, I]
  float* in_norm;
  float* post_norm;
};


}  // namespace

struct EeCudaModel {
  const eec::EnvSwitches env = eec::read_env_switches();  // first: members below read it
  EeCudaModelDesc d{};
  int H = 0, I = 0, V = 0, L = 0, QD = 0, KVD = 0, QKVW = 0, bs = 0, num_blocks = 0;
  cudaStream_t st = nullptr;
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
  std::vector<Layer> layers;
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
  // GEMMs of at most gemv_max_m rows go to our GEMV, the rest to cuBLAS. Measured on the H200 (whole
  // decode steps): the GEMV wins clearly at 1-4 rows (cuBLAS's small-M kernels read the weights at a
  // fraction of HBM bandwidth) and loses at 8 (1.36 vs 1.09 ms per step) and 16 (1.96 vs 1.25 ms).
  // ERNIE_CUDA_NO_GEMV / ERNIE_CUDA_GEMV_MAX_M move the threshold (env_switches.h).
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
  // The step's metadata, packed for S rows and SR logit rows (S = the graph's batch or the eager
  // step's rows), so that only what the step uses crosses PCIe: [token | pos | slot | bt_off |
  // tile_row | tile_n] x S, out_row x SR, counts x 2, block tables.
  static eec::RowMeta row_meta(const int32_t* b, int S, int SR) {
    return {b, b + S, b + 2 * S, b + 3 * S, b + 4 * S, b + 5 * S, b + 6 * S, b + 6 * S + SR, b + 6 * S + SR + 2};
  }
  eec::RowMeta cur{};  // the current step's (device pointers), set before run() or a capture

  template <typename T>
  T* own(size_t n) {
    T* p = dalloc<T>(n);
    owned.push_back(p);
    return p;
  }
  bf16* upload_bf16(const uint16_t* const* parts, const size_t* counts, int n) {
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += counts[i];
    bf16* p = own<bf16>(total);
    size_t at = 0;
    for (int i = 0; i < n; ++i) {
      CK(cudaMemcpy(p + at, parts[i], counts[i] * 2, cudaMemcpyHostToDevice));
      at += counts[i];
    }
    weight_bytes += total * 2;
    return p;
  }
  float* upload_f32(const float* h, size_t n) {
    float* p = own<float>(n);
    CK(cudaMemcpy(p, h, n * 4, cudaMemcpyHostToDevice));
    return p;
  }

  void drop_graphs() {
    for (auto& [k, g] : graphs) cudaGraphExecDestroy(g);
    graphs.clear();
  }

  void free_buffers() {
    for (void* p : {(void*)x, (void*)y, (void*)q, (void*)part_acc, (void*)part_ml, (void*)ylog, (void*)act,
                    (void*)meta, (void*)argmax_d, (void*)argmax_keys, (void*)sample_d, (void*)logits_d})
      if (p) cudaFree(p);
    for (void* p : {(void*)meta_h, (void*)argmax_h, (void*)sample_h, (void*)logits_h})
      if (p) cudaFreeHost(p);
    x = y = q = part_acc = part_ml = ylog = logits_d = logits_h = nullptr;
    act = nullptr;
    meta = meta_h = argmax_d = argmax_h = nullptr;
    argmax_keys = nullptr;
    sample_d = sample_h = nullptr;
  }

  // Grows the step buffers to at least these capacities (graphs captured on the old ones go).
  // rp: attention partial rows (rows x partitions; 0 when every tile writes its output directly).
  void ensure(int t, int r, size_t rp, int bt, bool want_logits) {
    const bool grow = t > cap_t || r > cap_r || rp > cap_rp || bt > cap_bt;
    const bool grow_l = want_logits && r > cap_rl;
    if (!grow && !grow_l) return;
    std::lock_guard<std::recursive_mutex> lock(api_mutex());
    CK(cudaStreamSynchronize(st));
    drop_graphs();
    if (grow) {
      cap_t = std::max(cap_t, t);
      cap_r = std::max(cap_r, r);
      cap_rp = std::max(cap_rp, rp);
      cap_bt = std::max(cap_bt, bt);
    }
    if (want_logits) cap_rl = std::max(std::max(cap_rl, r), cap_r);
    cap_rl = std::min(cap_rl, cap_r);
    free_buffers();
    const size_t T = size_t(cap_t), R = size_t(cap_r);
    x = dalloc<float>(T * H);
    act = dalloc<bf16>(2 * T * size_t(std::max({H, QD, I})));
    y = dalloc<float>(2 * T * size_t(std::max({QKVW, H, 2 * I})));
    q = dalloc<float>(T * QD);
    part_acc = dalloc<float>(std::max<size_t>(cap_rp, 1) * QD);
    part_ml = dalloc<float>(std::max<size_t>(cap_rp, 1) * size_t(d.heads) * 2);
    ylog = dalloc<float>(2 * R * V);
    meta = dalloc<int32_t>(size_t(meta_ints()));
    meta_h = halloc<int32_t>(size_t(meta_ints()));
    argmax_d = dalloc<int32_t>(R);
    argmax_keys = dalloc<unsigned long long>(R);
    sample_d = dalloc<eec::SampleParams>(R);
    sample_h = halloc<eec::SampleParams>(R);
    argmax_h = halloc<int32_t>(R);
    if (cap_rl > 0) {
      logits_d = dalloc<float>(size_t(cap_rl) * V);
      logits_h = halloc<float>(size_t(cap_rl) * V);
    }
  }

  // Row-major out[m, n] = a[m, k] · w[n, k]^T, i.e. column-major out^T = w · a^T; out bf16 when to_bf16
  // (then read as bf16 through the same pointer), else fp32.
  void gemm(const bf16* w, int n, int k, const bf16* a, int m, float* out, bool to_bf16) {
    if (m <= gemv_max_m && eec::gemv(w, n, k, a, m, out, to_bf16, st)) return;
    const float one = 1.0f, zero = 0.0f;
    CB(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16BF, k, a, CUDA_R_16BF, k, &zero, out,
                    to_bf16 ? CUDA_R_16BF : CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // The whole forward for T rows (metadata already on the device), R logit rows.
  // Attention grids: dec_tiles one-row tiles first (key partitions of part_keys, np of them), then
  // pre_tiles prefill tiles (one partition each); the step's own counts (cur.counts, on the device)
  // may be smaller (graphs).
  // out: what the logit rows become (logits, argmax ids, or ids sampled with sample_d's parameters).
  enum class Out { kLogits = 0, kArgmax = 1, kSample = 2 };
  void run(int T, int R, int dec_tiles, int pre_tiles, int part_keys, int np, Out mode) {
    const eec::RowMeta m = cur;
    const int PT = planes * T, PR = planes * R;
    const float eps = d.rms_norm_eps;
    auto op = [&](const char* name, auto&& f) {
      if (prof.ops) prof.begin(st);
      f();
      if (prof.ops) prof.end(st, std::string(name) + "." + shape);
    };
    if (prof.ops) {
      prof.count("rows." + shape, T);
      prof.count("prefill_tiles." + shape, pre_tiles);
    }
    op("embed+norm", [&] {
      eec::embed(embed, m, T, H, x, st);
      eec::residual_rmsnorm(x, nullptr, false, nullptr, T, T, H, layers[0].in_norm, eps, false, planes, act, st);
    });
    const bool yb = bf16_out;  // y (every layer GEMM's output) holds bf16
    for (int l = 0; l < L; ++l) {
      const Layer& w = layers[size_t(l)];
      op("gemm_qkv", [&] { gemm(w.qkv, QKVW, H, act, PT, y, yb); });
      op("rope_kv", [&] {
        eec::rope_kv(y, yb, m, T, d.heads, d.kv_heads, d.head_dim, inv_freq, d.rope_interleaved != 0, planes, q,
                     kc(l), vc(l), kv_bf16, st);
      });
      if (dec_tiles > 0)
        op("attention_decode_rows", [&] {
          eec::attention(q, kc(l), vc(l), kv_bf16, m, T, dec_tiles, d.heads, d.kv_heads, d.head_dim, bs, part_keys, np,
                         planes, part_acc, part_ml, act, st);
        });
      if (pre_tiles > 0)
        op("attention_prefill", [&] {
          eec::attention_prefill(q, kc(l), vc(l), kv_bf16, m, T, pre_tiles, d.heads, d.kv_heads, d.head_dim, bs,
                                 planes, act, st);
        });
      op("gemm_o", [&] { gemm(w.o, H, QD, act, PT, y, yb); });
      op("norm", [&] { eec::residual_rmsnorm(x, y, yb, nullptr, T, T, H, w.post_norm, eps, true, planes, act, st); });
      op("gemm_gate_up", [&] { gemm(w.gate_up, 2 * I, H, act, PT, y, yb); });
      op("silu", [&] { eec::silu_mul(y, yb, T, I, planes, act, st); });
      op("gemm_down", [&] { gemm(w.down, H, I, act, PT, y, yb); });
      op("norm", [&] {
        if (l + 1 < L)
          eec::residual_rmsnorm(x, y, yb, nullptr, T, T, H, layers[size_t(l) + 1].in_norm, eps, true, planes, act, st);
        else if (R > 0)
          eec::residual_rmsnorm(x, y, yb, m.out_row, T, R, H, final_norm, eps, false, planes, act, st);
      });
    }
    if (R == 0) return;
    op("lm_head", [&] { gemm(lm_head, V, H, act, PR, ylog, false); });
    op("logits", [&] {
      if (mode == Out::kSample)
        eec::sample(ylog, R, V, planes, sample_d, argmax_d, st);
      else if (mode == Out::kArgmax)
        eec::logits_argmax(ylog, R, V, planes, argmax_keys, argmax_d, st);
      else
        eec::logits_sum(ylog, R, V, planes, logits_d, st);
    });
    CK(cudaGetLastError());
  }
};

namespace {

void capture_all(EeCudaModel& m);
int bucket(int n);

void create_model(EeCudaModel& m, const EeCudaModelDesc& d) {
  m.d = d;
  m.d.inv_freq = nullptr;
  m.H = d.hidden;
  m.I = d.intermediate;
  m.V = d.vocab;
  m.L = d.layers;
  m.QD = d.heads * d.head_dim;
  m.KVD = d.kv_heads * d.head_dim;
  m.QKVW = m.QD + 2 * m.KVD;
  m.bs = d.block_size;
  m.planes = d.precise ? 2 : 1;
  m.kv_bf16 = d.kv_bf16 != 0;
  m.bf16_out = m.planes == 1 && m.env.bf16_out;
  m.walk = m.kv_bf16 && m.planes == 1 && m.env.decode_walk;
  if (!eec::attention_supported(d.heads, d.kv_heads, d.head_dim))
    throw std::runtime_error("the CUDA backend supports head_dim 64 or 128 and 1, 2, 4, 8 or 16 query heads per KV head (got head_dim " +
                             std::to_string(d.head_dim) + ", " + std::to_string(d.heads / d.kv_heads) + ")");
  if (d.block_size < 1 || d.max_model_len < 1) throw std::runtime_error("block_size and max_model_len must be positive");
  if (d.hidden < 1 || d.hidden > 8192 || d.intermediate % 4 != 0)  // residual_rmsnorm's and silu_mul's launch shapes
    throw std::runtime_error("the CUDA backend supports hidden sizes up to 8192 and intermediate sizes divisible by 4 (got " +
                             std::to_string(d.hidden) + ", " + std::to_string(d.intermediate) + ")");
  CK(cudaSetDevice(d.device));
  CK(cudaStreamCreateWithFlags(&m.st, cudaStreamNonBlocking));
  CK(eec::attention_prepare(d.heads, d.kv_heads, d.head_dim, m.kv_bf16, m.planes));
  CK(eec::attention_prefill_prepare(d.head_dim, m.kv_bf16, m.planes));
  CB(cublasCreate(&m.blas));
  CB(cublasSetStream(m.blas, m.st));
  m.blas_ws = m.own<uint8_t>(kBlasWorkspace);
  CB(cublasSetWorkspace(m.blas, m.blas_ws, kBlasWorkspace));
  CB(cublasSetMathMode(m.blas, CUBLAS_DEFAULT_MATH));  // bf16 inputs: tensor cores, fp32 accumulate

  const size_t H = size_t(m.H), I = size_t(m.I), QD = size_t(m.QD), KVD = size_t(m.KVD), V = size_t(m.V);
  {
    const uint16_t* p[] = {d.embed};
    const size_t c[] = {V * H};
    m.embed = m.upload_bf16(p, c, 1);
  }
  if (d.lm_head == d.embed) {
    m.lm_head = m.embed;
  } else {
    const uint16_t* p[] = {d.lm_head};
    const size_t c[] = {V * H};
    m.lm_head = m.upload_bf16(p, c, 1);
  }
  m.final_norm = m.upload_f32(d.final_norm, H);
  m.inv_freq = m.upload_f32(d.inv_freq, size_t(d.head_dim / 2));
  for (int l = 0; l < m.L; ++l) {
    Layer w;
    const uint16_t* qkv[] = {d.q_proj[l], d.k_proj[l], d.v_proj[l]};
    const size_t cqkv[] = {QD * H, KVD * H, KVD * H};
    w.qkv = m.upload_bf16(qkv, cqkv, 3);
    const uint16_t* o[] = {d.o_proj[l]};
    const size_t co[] = {H * QD};
    w.o = m.upload_bf16(o, co, 1);
    const uint16_t* gu[] = {d.gate_proj[l], d.up_proj[l]};
    const size_t cgu[] = {I * H, I * H};
    w.gate_up = m.upload_bf16(gu, cgu, 2);
    const uint16_t* dn[] = {d.down_proj[l]};
    const size_t cdn[] = {H * I};
    w.down = m.upload_bf16(dn, cdn, 1);
    w.in_norm = m.upload_f32(d.input_norm[l], H);
    w.post_norm = m.upload_f32(d.post_attn_norm[l], H);
    m.layers.push_back(w);
  }

  // Step buffers for the largest decode graph and prefill chunk up front.
  const int max_seqs = std::max(1, d.max_num_seqs);
  const int rows = std::max(max_seqs, std::max(1, d.max_batched_tokens));
  const int bt_per_seq = (d.max_model_len + d.block_size - 1) / d.block_size;
  // Attention partial rows: the most any decode grid up to the largest graph bucket needs (the
  // partition size depends on the row count, and with the whole-row kernel the largest grids need
  // none), so that capturing the graphs never grows the buffers (which drops the graphs captured).
  size_t max_rp = 0;
  for (int r = 1; r <= bucket(max_seqs); ++r) {
    const int pk = eec::attn_decode_part_keys(r, m.walk);
    const size_t np = size_t((d.max_model_len + pk - 1) / pk);
    if (np > 1) max_rp = std::max(max_rp, size_t(r) * np);
  }
  m.ensure(rows, max_seqs, max_rp, max_seqs * bt_per_seq + rows + 1, false);

  const size_t elem = m.kv_bf16 ? 2 : 4;
  const size_t block_bytes = size_t(m.L) * 2 * size_t(d.block_size) * KVD * elem;
  int nb = d.num_blocks;
  if (nb <= 0) {
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    const double budget = double(d.gpu_memory_utilization) * double(total_b) - double(total_b - free_b) - double(kHeadroom);
    if (budget < double(block_bytes) * 2)
      throw std::runtime_error("gpu_memory_utilization " + std::to_string(d.gpu_memory_utilization) +
                               " leaves no room for the KV cache (" + std::to_string((total_b - free_b) >> 20) +
                               " MiB of " + std::to_string(total_b >> 20) + " MiB already in use)");
    nb = int(std::min(budget / double(block_bytes) - 1, 2.0e9));
  }
  m.num_blocks = nb;
  m.layer_bytes = size_t(nb + 1) * size_t(d.block_size) * KVD * elem;
  m.kv_bytes = size_t(m.L) * 2 * m.layer_bytes;
  m.kv = m.own<char>(m.kv_bytes);
  CK(cudaMemsetAsync(m.kv, 0, m.kv_bytes, m.st));
  CK(cudaStreamSynchronize(m.st));
  if (d.capture_graphs && !d.enforce_eager && !m.prof.ops) capture_all(m);  // op profiling runs eagerly
}

// Profile labels: steps grouped by rows.
int row_bucket(int n) {
  for (int b : {16, 64, 256, 512, 1024, 2048, 4096})
    if (n <= b) return b;
  return 1 << 30;
}

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
double ms_since(Clock::time_point t) { return ms_between(t, Clock::now()); }

// Rows of a mixed-step graph for T rows: steps of 32 rows up to 256, 64 up to 1024, 128 up to
// 2048, then 256 (at most ~6% padding past 256 rows; ~40 graphs for a 4096-token budget).
int mixed_bucket(int T) {
  const int step = T <= 256 ? 32 : T <= 1024 ? 64 : T <= 2048 ? 128 : 256;
  return (T + step - 1) / step * step;
}

int bucket(int n) {
  if (n <= 8) {
    int b = 1;
    while (b < n) b *= 2;
    return b;
  }
  return (n + 15) / 16 * 16;
}

// A step graph's shape, every field a function of its kind and padded rows B.
struct GraphPlan {
  bool mixed = false;
  int B = 0, SR = 0;  // rows, logit rows
  int dec_grid = 0, pre_grid = 0, part_keys = 0, np = 0;  // attention grids (see EeCudaModel::run)
};

GraphPlan plan_graph(const EeCudaModel& m, bool mixed, int B) {
  const int max_seqs = std::max(1, m.d.max_num_seqs);
  const int qt = eec::attn_rows_per_tile(m.d.heads, m.d.kv_heads);
  GraphPlan g;
  g.mixed = mixed;
  g.B = B;
  g.SR = mixed ? std::min(B, max_seqs) : B;       // a logit row per slice at most
  g.dec_grid = mixed ? std::min(B, max_seqs) : B;  // a decode tile per slice at most
  // A chunk of c rows makes ceil(c / qt) prefill tiles: at most B / qt + one per slice.
  g.pre_grid = mixed ? std::min(B, (B + qt - 1) / qt + std::min(B, max_seqs)) : 0;
  g.part_keys = eec::attn_decode_part_keys(g.dec_grid, m.walk);
  g.np = (m.d.max_model_len + g.part_keys - 1) / g.part_keys;  // any row up to max_model_len
  return g;
}

// The graph of this plan and output mode, captured on first use. Graphs read the step's metadata
// from m.meta laid out for (B, SR) rows, so m.cur is set to that layout here. The capture holds
// api_mutex (see there for why).
// step_meta: called for a step being served (its metadata is in m.meta), not at startup. Then a
// failed capture does not fail the step: null is returned, the caller runs the step eagerly,
// m.no_graph remembers the plan so it is not retried, and the error is printed. At startup the
// error propagates (the model does not open).
cudaGraphExec_t graph_for(EeCudaModel& m, const GraphPlan& g, EeCudaModel::Out mode, bool step_meta) {
  const std::array<int, 4> key{g.mixed ? 1 : 0, g.B, g.SR, int(mode)};
  auto it = m.graphs.find(key);
  if (it != m.graphs.end()) return it->second;
  if (m.no_graph.count(key)) return nullptr;
  m.ensure(g.B, g.SR, g.np > 1 ? size_t(g.dec_grid) * size_t(g.np) : 0, 1, mode == EeCudaModel::Out::kLogits);
  m.cur = EeCudaModel::row_meta(m.meta, g.B, g.SR);
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  const auto t_cap = Clock::now();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CK(cudaStreamBeginCapture(m.st, cudaStreamCaptureModeThreadLocal));
  try {
    m.run(g.B, g.SR, g.dec_grid, g.pre_grid, g.part_keys, g.np, mode);
    if (step_meta && m.fail_captures > 0 && m.fail_captures--) throw std::runtime_error("ERNIE_CUDA_FAIL_CAPTURES");
    CK(cudaStreamEndCapture(m.st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphDestroy(graph);
  } catch (const std::exception& e) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(m.st, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone) {
      cudaStreamEndCapture(m.st, &graph);
    }
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // capture errors are not sticky: clear the last-error slot
    if (!step_meta) throw;     // at startup: the model fails to open, with the reason
    m.no_graph.insert(key);
    std::fprintf(stderr, "[cuda] capturing a %s step graph of %d rows failed (%s); that shape runs eagerly from now on\n",
                 g.mixed ? "mixed" : "decode", g.B, e.what());
    return nullptr;
  }
  m.graphs.emplace(key, exec);
  ++m.captures;
  m.prof.host(std::string("capture.") + (g.mixed ? "mixed" : "decode"), ms_since(t_cap));
  return exec;
}

// Every decode and mixed-step graph, greedy and sampling outputs (desc.capture_graphs).
void capture_all(EeCudaModel& m) {
  const int max_seqs = std::max(1, m.d.max_num_seqs);
  for (auto mode : {EeCudaModel::Out::kArgmax, EeCudaModel::Out::kSample}) {
    for (int b = 1;; b = bucket(b + 1)) {  // the decode buckets up to the one holding max_seqs
      graph_for(m, plan_graph(m, false, b), mode, false);
      if (b >= max_seqs) break;
    }
    for (int t = mixed_bucket(1); t <= m.cap_t; t = mixed_bucket(t + 1)) graph_for(m, plan_graph(m, true, t), mode, false);
  }
  CK(cudaStreamSynchronize(m.st));
}

// sampling: per logit row, or null (argmax when argmax_out is given).
void forward(EeCudaModel& m, const EeCudaSlice* s, int n, float* logits, int32_t* argmax_out,
             const EeCudaSample* sampling) {
  const auto t_host = Clock::now();
  const bool want_argmax = argmax_out != nullptr;
  const auto mode = sampling ? EeCudaModel::Out::kSample : want_argmax ? EeCudaModel::Out::kArgmax : EeCudaModel::Out::kLogits;
  int T = 0, R = 0, BT = 0, max_ctx = 0;
  bool decode = n > 0;
  for (int i = 0; i < n; ++i) {
    T += s[i].n_tokens;
    R += s[i].logits == 2 ? s[i].n_tokens : s[i].logits == 1 ? 1 : 0;
    BT += s[i].n_blocks;
    max_ctx = std::max(max_ctx, s[i].start_pos + s[i].n_tokens);
    decode = decode && s[i].n_tokens == 1 && s[i].logits == 1;
  }
  if (m.prof.on) {  // profile labels only: no string work on the serving path
    m.shape = decode ? "decode" : "mixed";
    if (m.prof.ops) m.shape += "." + std::to_string(row_bucket(T));
  }
  // Three kinds of step:
  // - decode graph: every slice one token with logits; B = bucket(n) rows, padded rows are one-row
  //   attention tiles on the scratch block.
  // - mixed graph: prefill chunks beside decodes, padded to B = mixed_bucket(T) rows and RB logit
  //   rows; the attention grids are sized for the most tiles such a step can have (blocks past the
  //   step's counts exit) and padded rows are in no tile. Captured once per (B, RB, output mode), so
  //   no step pays cuBLAS's per-shape host work or ~200 eager launches (measured on the H200,
  //   random workload at 256 streams: eager mixed steps of ~740 rows spent 3.0 ms launching).
  // - eager: prompt-logprob steps (logits for every row), --enforce-eager, the op profiler.
  const int max_seqs = std::max(1, m.d.max_num_seqs);
  bool all_rows = false;  // a slice wants logits for every row
  for (int i = 0; i < n; ++i) all_rows = all_rows || s[i].logits == 2;
  const bool may_graph = !m.d.enforce_eager && !m.prof.ops && n <= max_seqs && max_ctx <= m.d.max_model_len;
  const bool graph = decode && may_graph;
  const bool mgraph = !decode && n > 0 && !all_rows && may_graph && mixed_bucket(T) <= m.cap_t;
  const GraphPlan gp = graph || mgraph ? plan_graph(m, mgraph, graph ? bucket(n) : mixed_bucket(T)) : GraphPlan{};
  const int B = graph || mgraph ? gp.B : T;  // rows actually run
  const int RR = graph || mgraph ? gp.SR : R;
  // One-row slices (decodes) become one-row attention tiles split into key partitions; longer
  // slices (prefill chunks) tiles of up to qt rows, one partition each.
  int n_dec = 0, dec_ctx = 0;
  for (int i = 0; i < n; ++i)
    if (s[i].n_tokens == 1) {
      ++n_dec;
      dec_ctx = std::max(dec_ctx, s[i].start_pos + 1);
    }
  const int qt = eec::attn_rows_per_tile(m.d.heads, m.d.kv_heads);
  // The attention grids: decode tiles (rows the partitions are sized for) and prefill tiles.
  const int dec_grid = graph || mgraph ? gp.dec_grid : n_dec;
  const int part_keys = graph || mgraph ? gp.part_keys : eec::attn_decode_part_keys(dec_grid, m.walk);
  const int np = graph || mgraph ? gp.np : (dec_ctx + part_keys - 1) / part_keys;
  m.ensure(B, std::max(RR, 1), np > 1 ? size_t(dec_grid) * size_t(np) : 0, BT + 1, !want_argmax);

  const int S = B, SR = std::max(RR, 1);
  const eec::RowMeta hm = EeCudaModel::row_meta(m.meta_h, S, SR);
  int32_t* tok = const_cast<int32_t*>(hm.token);
  int32_t* pos = const_cast<int32_t*>(hm.pos);
  int32_t* slot = const_cast<int32_t*>(hm.slot);
  int32_t* bt_off = const_cast<int32_t*>(hm.bt_off);
  int32_t* tile_row = const_cast<int32_t*>(hm.tile_row);
  int32_t* tile_n = const_cast<int32_t*>(hm.tile_n);
  int32_t* out_row = const_cast<int32_t*>(hm.out_row);
  int32_t* counts = const_cast<int32_t*>(hm.counts);
  int32_t* bt = const_cast<int32_t*>(hm.bt);
  int row = 0, out = 0, bt_at = 0, dec_tiles = 0;
  int pre_tiles = 0;  // written after the decode tiles, once those are counted
  for (int i = 0, r = 0; i < n; r += s[i].n_tokens, ++i)
    if (s[i].n_tokens == 1) {
      tile_row[dec_tiles] = r;
      tile_n[dec_tiles++] = 1;
    }
  for (int i = 0, r = 0; i < n; r += s[i].n_tokens, ++i)
    for (int t = 0; s[i].n_tokens > 1 && t < s[i].n_tokens; t += qt, ++pre_tiles) {
      tile_row[dec_tiles + pre_tiles] = r + t;
      tile_n[dec_tiles + pre_tiles] = std::min(qt, s[i].n_tokens - t);
    }
  for (int i = 0; i < n; ++i) {
    std::memcpy(bt + bt_at, s[i].block_table, sizeof(int32_t) * size_t(s[i].n_blocks));
    for (int t = 0; t < s[i].n_tokens; ++t, ++row) {
      const int p = s[i].start_pos + t;
      tok[row] = s[i].tokens[t];
      pos[row] = p;
      slot[row] = s[i].block_table[p / m.bs] * m.bs + p % m.bs;
      bt_off[row] = bt_at;
      if (s[i].logits == 2 || (s[i].logits == 1 && t == s[i].n_tokens - 1)) out_row[out++] = row;
    }
    bt_at += s[i].n_blocks;
  }
  bt[bt_at] = m.num_blocks;  // the scratch block, for padded rows
  for (; row < B; ++row) {
    tok[row] = 0;
    pos[row] = 0;
    slot[row] = m.num_blocks * m.bs;
    bt_off[row] = bt_at;
    if (graph) {
      out_row[out++] = row;
      tile_row[dec_tiles] = row;  // padded decode-graph rows: one-row tiles after the real ones
      tile_n[dec_tiles++] = 1;
    }
  }
  for (; out < SR; ++out) out_row[out] = 0;  // padded logit rows of a mixed graph (never read)
  counts[0] = dec_tiles;
  counts[1] = pre_tiles;
  m.cur = EeCudaModel::row_meta(m.meta, S, SR);
  if (sampling) {  // padded graph rows sample greedily (their ids are never read)
    for (int i = 0; i < SR; ++i) {
      eec::SampleParams& p = m.sample_h[i];
      p = eec::SampleParams{};
      if (i < R) {
        p.temperature = sampling[i].temperature;
        p.top_p = sampling[i].top_p;
        p.min_p = sampling[i].min_p;
        p.u = sampling[i].u;
        p.top_k = sampling[i].top_k;
      }
    }
    CK(cudaMemcpyAsync(m.sample_d, m.sample_h, sizeof(eec::SampleParams) * size_t(SR), cudaMemcpyHostToDevice, m.st));
  }
  CK(cudaMemcpyAsync(m.meta, m.meta_h, sizeof(int32_t) * size_t(EeCudaModel::meta_len(S, SR, bt_at + 1)), cudaMemcpyHostToDevice, m.st));

  const auto t_launch = Clock::now();
  m.prof.step_begin(m.st);
  cudaGraphExec_t exec = graph || mgraph ? graph_for(m, gp, mode, true) : nullptr;
  if (exec) {
    m.prof.begin(m.st);
    CK(cudaGraphLaunch(exec, m.st));
    if (m.prof.on) m.prof.end(m.st, (mgraph ? "graph.mixed." : "graph.") + std::to_string(B));
    ++m.graph_steps;
  } else if (graph || mgraph) {  // the plan's step without its graph (its capture failed); m.cur is its layout
    m.run(gp.B, gp.SR, gp.dec_grid, gp.pre_grid, gp.part_keys, gp.np, mode);
    ++m.eager_steps;
  } else {
    m.run(T, R, dec_tiles, pre_tiles, part_keys, np, mode);
    ++m.eager_steps;
  }
  const auto t_launched = Clock::now();
  m.prof.step_end(m.st);
  if (R > 0) {
    if (want_argmax)
      CK(cudaMemcpyAsync(m.argmax_h, m.argmax_d, sizeof(int32_t) * size_t(R), cudaMemcpyDeviceToHost, m.st));
    else
      CK(cudaMemcpyAsync(m.logits_h, m.logits_d, sizeof(float) * size_t(R) * m.V, cudaMemcpyDeviceToHost, m.st));
  }
  CK(cudaStreamSynchronize(m.st));
  const auto t_done = Clock::now();
  if (m.prof.steps)
    m.prof.step(m.shape + (graph || mgraph ? "(g)." : ".") + std::to_string(row_bucket(B)), B, ms_between(t_host, t_launch),
                ms_between(t_launch, t_launched), ms_between(t_host, t_done));
  else if (m.prof.on)
    m.prof.host("forward_call." + m.shape, ms_between(t_host, t_done));
  if (R > 0) {
    if (want_argmax)
      std::memcpy(argmax_out, m.argmax_h, sizeof(int32_t) * size_t(R));
    else
      std::memcpy(logits, m.logits_h, sizeof(float) * size_t(R) * m.V);
  }
}

void destroy_model(EeCudaModel* m) {
  if (m->st) cudaStreamSynchronize(m->st);
  m->prof.print();
  m->drop_graphs();
  m->free_buffers();
  if (m->pairs) cudaFree(m->pairs);
  for (void* p : m->owned) cudaFree(p);
  if (m->blas) cublasDestroy(m->blas);
  if (m->st) cudaStreamDestroy(m->st);
}

}  // namespace

extern "C" {

int ee_cuda_abi_version(void) { return EE_CUDA_ABI_VERSION; }

int ee_cuda_device_count(char* err, int errlen) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    set_err(err, errlen, std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
    return 0;
  }
  if (n == 0) set_err(err, errlen, "no CUDA device");
  return n;
}

EeCudaModel* ee_cuda_create(const EeCudaModelDesc* desc, char* err, int errlen) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  auto* m = new EeCudaModel();
  try {
    create_model(*m, *desc);
    return m;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    destroy_model(m);
    delete m;
    return nullptr;
  }
}

void ee_cuda_destroy(EeCudaModel* m) {
  if (!m) return;
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  destroy_model(m);
  delete m;
}

int ee_cuda_info(EeCudaModel* m, EeCudaInfo* out) {
  std::memset(out, 0, sizeof(*out));
  out->num_blocks = m->num_blocks;
  out->kv_bytes = m->kv_bytes;
  out->weight_bytes = m->weight_bytes;
  size_t f = 0, t = 0;
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  if (cudaMemGetInfo(&f, &t) == cudaSuccess) {
    out->gpu_bytes_used = t - f;
    out->gpu_bytes_total = t;
  }
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, m->d.device) == cudaSuccess) std::snprintf(out->device_name, sizeof(out->device_name), "%s", p.name);
  return 0;
}

int ee_cuda_forward(EeCudaModel* m, const EeCudaSlice* slices, int n, float* logits, int32_t* argmax,
                    const EeCudaSample* sample, char* err, int errlen) {
  try {
    if ((logits == nullptr) == (argmax == nullptr)) throw std::runtime_error("exactly one of logits / argmax");
    if (sample && !argmax) throw std::runtime_error("sampling writes ids: pass argmax");
    forward(*m, slices, n, logits, argmax, sample);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, std::string("CUDA forward: ") + e.what());
    return 1;
  }
}

int ee_cuda_copy_blocks(EeCudaModel* m, const int32_t* src, const int32_t* dst, int n, char* err, int errlen) {
  try {
    if (n <= 0) return 0;
    if (n > m->cap_pairs) {
      std::lock_guard<std::recursive_mutex> lock(api_mutex());
      if (m->pairs) CK(cudaFree(m->pairs));
      m->pairs = dalloc<int32_t>(size_t(2 * n));
      m->cap_pairs = n;
    }
    std::vector<int32_t> pairs(size_t(2 * n));
    for (int i = 0; i < n; ++i) {
      pairs[size_t(2 * i)] = src[i];
      pairs[size_t(2 * i + 1)] = dst[i];
    }
    CK(cudaMemcpyAsync(m->pairs, pairs.data(), pairs.size() * 4, cudaMemcpyHostToDevice, m->st));
    const size_t block_bytes = size_t(m->bs) * size_t(m->KVD) * (m->kv_bf16 ? 2 : 4);
    for (int l = 0; l < m->L; ++l) {
      eec::copy_blocks(m->kc(l), m->pairs, n, block_bytes, m->st);
      eec::copy_blocks(m->vc(l), m->pairs, n, block_bytes, m->st);
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(m->st));
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, std::string("CUDA copy_blocks: ") + e.what());
    return 1;
  }
}

void ee_cuda_graph_stats(EeCudaModel* m, uint64_t* graph_steps, uint64_t* eager_steps, uint64_t* captures) {
  *graph_steps = m->graph_steps;
  *eager_steps = m->eager_steps;
  *captures = m->captures;
}

}  // extern "C"
