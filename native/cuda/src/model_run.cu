// One forward of the model (EeCudaModel::run): the kernels and GEMMs of every layer for a step's
// rows, on the model's stream, eager or recorded into a graph by a capture (model_graphs.cu).
#include <string>

#include "model.h"

void EeCudaModel::gemm(const bf16* w, int n, int k, const bf16* a, int m, float* out, bool to_bf16) {
  if (m <= gemv_max_m && eec::gemv(w, n, k, a, m, out, to_bf16, st)) return;
  const float one = 1.0f, zero = 0.0f;
  CB(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16BF, k, a, CUDA_R_16BF, k, &zero, out,
                  to_bf16 ? CUDA_R_16BF : CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void EeCudaModel::run(int T, int R, int dec_tiles, int pre_tiles, int part_keys, int np, Out mode) {
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
    const eec::Layer& w = layers[size_t(l)];
    op("gemm_qkv", [&] { gemm(w.qkv, QKVW, H, act, PT, y, yb); });
    op("rope_kv", [&] {
      eec::rope_kv(y, yb, m, T, d.heads, d.kv_heads, d.head_dim, inv_freq, d.rope_interleaved != 0, planes, q, kc(l),
                   vc(l), kv_bf16, st);
    });
    const auto decode_rows = [&](cudaStream_t s) {
      eec::attention(q, kc(l), vc(l), kv_bf16, m, T, dec_tiles, d.heads, d.kv_heads, d.head_dim, bs, part_keys, np,
                     planes, part_acc, part_ml, act, s);
    };
    const auto prefill_tiles = [&](cudaStream_t s) {
      eec::attention_prefill(q, kc(l), vc(l), kv_bf16, m, T, pre_tiles, d.heads, d.kv_heads, d.head_dim, bs, planes,
                             act, s);
    };
    if (dec_tiles > 0) op("attention_decode_rows", [&] { decode_rows(st); });
    if (pre_tiles > 0) op("attention_prefill", [&] { prefill_tiles(st); });
    op("gemm_o", [&] { gemm(w.o, H, QD, act, PT, y, yb); });
    op("norm", [&] { eec::residual_rmsnorm(x, y, yb, nullptr, T, T, H, w.post_norm, eps, true, planes, act, st); });
    op("gemm_gate_up", [&] { gemm(w.gate_up, 2 * I, H, act, PT, y, yb); });
    op("silu", [&] { eec::silu_mul(y, yb, T, I, planes, act, st); });
    op("gemm_down", [&] { gemm(w.down, H, I, act, PT, y, yb); });
    op("norm", [&] {
      if (l + 1 < L)
        eec::residual_rmsnorm(x, y, yb, nullptr, T, T, H, layers[size_t(l) + 1].in_norm, eps, true, planes, act, st);
      else if (R > 0) eec::residual_rmsnorm(x, y, yb, m.out_row, T, R, H, final_norm, eps, false, planes, act, st);
    });
  }
  if (R == 0) return;
  op("lm_head", [&] { gemm(lm_head, V, H, act, PR, ylog, false); });
  if (mode == Out::kSample) return;  // sampled by the step after its parameters arrive (model_step.cu)
  op("logits", [&] {
    if (mode == Out::kArgmax) eec::logits_argmax(ylog, R, V, planes, argmax_keys, argmax_d, st);
    else eec::logits_sum(ylog, R, V, planes, logits_d, st);
  });
  CK(cudaGetLastError());
}
