// Graph plans and captures (see model_graphs.h).
#include <algorithm>
#include <cstdio>
#include <string>

#include "model_graphs.h"

namespace eec {

GraphPlan plan_graph(const EeCudaModel& m, bool mixed, int B) {
  const int max_seqs = std::max(1, m.d.max_num_seqs);
  const int qt = eec::attn_rows_per_tile(m.d.heads, m.d.kv_heads);
  GraphPlan g;
  g.mixed = mixed;
  g.B = B;
  g.SR = mixed ? std::min(B, max_seqs) : B;        // a logit row per slice at most
  g.dec_grid = mixed ? std::min(B, max_seqs) : B;  // a decode tile per slice at most
  // A chunk of c rows makes ceil(c / qt) prefill tiles: at most B / qt + one per slice.
  g.pre_grid = mixed ? std::min(B, (B + qt - 1) / qt + std::min(B, max_seqs)) : 0;
  g.part_keys = eec::attn_decode_part_keys(g.dec_grid, m.walk);
  g.np = (m.d.max_model_len + g.part_keys - 1) / g.part_keys;  // any row up to max_model_len
  return g;
}

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
    std::fprintf(stderr,
                 "[cuda] capturing a %s step graph of %d rows failed (%s); that shape runs eagerly from now on\n",
                 g.mixed ? "mixed" : "decode", g.B, e.what());
    return nullptr;
  }
  m.graphs.emplace(key, exec);
  ++m.captures;
  m.prof.host(std::string("capture.") + (g.mixed ? "mixed" : "decode"), ms_since(t_cap));
  return exec;
}

void capture_all(EeCudaModel& m) {
  const int max_seqs = std::max(1, m.d.max_num_seqs);
  for (auto mode : {EeCudaModel::Out::kArgmax, EeCudaModel::Out::kSample, EeCudaModel::Out::kLogits}) {
    for (int b = 1;; b = bucket(b + 1)) {  // the decode buckets up to the one holding max_seqs
      graph_for(m, plan_graph(m, false, b), mode, false);
      if (b >= max_seqs) break;
    }
    for (int t = mixed_bucket(1); t <= m.cap_t; t = mixed_bucket(t + 1))
      graph_for(m, plan_graph(m, true, t), mode, false);
  }
  CK(cudaStreamSynchronize(m.st));
}

}  // namespace eec
