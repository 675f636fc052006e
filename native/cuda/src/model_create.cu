// Creating a model: the shape checks, the stream and cuBLAS, the weights uploaded in the
// checkpoint's [out, in] layout (q/k/v and gate/up concatenated: one GEMM each), the step buffers
// up front, the KV cache sized from the desc or from free GPU memory, the graphs captured at load
// when asked; and destroying it.
#include <algorithm>
#include <string>

#include "model_graphs.h"

namespace {

constexpr size_t kBlasWorkspace = size_t(64) << 20;
constexpr size_t kHeadroom = size_t(1) << 30;  // cuBLAS, graphs and buffer growth beyond the KV cache

}  // namespace

bf16* EeCudaModel::upload_bf16(const uint16_t* const* parts, const size_t* counts, int n) {
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
float* EeCudaModel::upload_f32(const float* h, size_t n) {
  float* p = own<float>(n);
  CK(cudaMemcpy(p, h, n * 4, cudaMemcpyHostToDevice));
  return p;
}

namespace eec {

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
    throw std::runtime_error(
        "the CUDA backend supports head_dim 64 or 128 and 1, 2, 4, 8 or 16 query heads per KV head (got head_dim " +
        std::to_string(d.head_dim) + ", " + std::to_string(d.heads / d.kv_heads) + ")");
  if (d.block_size < 1 || d.max_model_len < 1)
    throw std::runtime_error("block_size and max_model_len must be positive");
  if (d.hidden < 1 || d.hidden > 8192 || d.intermediate % 4 != 0)  // residual_rmsnorm's and silu_mul's launch shapes
    throw std::runtime_error(
        "the CUDA backend supports hidden sizes up to 8192 and intermediate sizes divisible by 4 (got " +
        std::to_string(d.hidden) + ", " + std::to_string(d.intermediate) + ")");
  CK(cudaSetDevice(d.device));
  CK(cudaStreamCreateWithFlags(&m.st, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&m.st_masks, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&m.masks_up, cudaEventDisableTiming));
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
  const int rows = std::max(bucket(max_seqs), std::max(1, d.max_batched_tokens));
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
  // Rows: the largest decode graph's (bucket(max_seqs) may pass max_seqs). The logit rows of the
  // host-sampling path (logprobs, penalties, logit bias, n > 1) are sized here too: growing either
  // later drops every graph captured so far (ensure), and the first such request (the sidecar's
  // warm-up asks for logprobs) then left every later step shape to be captured on its first use,
  // inside a served step.
  m.ensure(rows, bucket(max_seqs), max_rp, max_seqs * bt_per_seq + rows + 1, true);

  const size_t elem = m.kv_bf16 ? 2 : 4;
  const size_t block_bytes = size_t(m.L) * 2 * size_t(d.block_size) * KVD * elem;
  int nb = d.num_blocks;
  if (nb <= 0) {
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    const double budget =
        double(d.gpu_memory_utilization) * double(total_b) - double(total_b - free_b) - double(kHeadroom);
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

void destroy_model(EeCudaModel* m) {
  if (m->st) cudaStreamSynchronize(m->st);
  m->prof.print();
  m->drop_graphs();
  m->free_buffers();
  if (m->pairs) cudaFree(m->pairs);
  for (void* p : m->owned) cudaFree(p);
  if (m->blas) cublasDestroy(m->blas);
  if (m->masks_up) cudaEventDestroy(m->masks_up);
  if (m->st_masks) cudaStreamDestroy(m->st_masks);
  if (m->st) cudaStreamDestroy(m->st);
}

}  // namespace eec
