// CUDA graphs of the model's steps: which padded shape a step runs as (its plan), the graph of
// each plan and output mode, captured on first use or all at load (model_graphs.cu).
#pragma once
#include "model.h"

namespace eec {

// Rows of a mixed-step graph for T rows: steps of 32 rows up to 256, 64 up to 1024, 128 up to
// 2048, then 256 (at most ~6% padding past 256 rows; ~40 graphs for a 4096-token budget).
inline int mixed_bucket(int T) {
  const int step = T <= 256 ? 32 : T <= 1024 ? 64 : T <= 2048 ? 128 : 256;
  return (T + step - 1) / step * step;
}

// Rows of a decode-step graph for n sequences: 1, 2, 4, 8, then multiples of 16.
inline int bucket(int n) {
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
  int B = 0, SR = 0;                                      // rows, logit rows
  int dec_grid = 0, pre_grid = 0, part_keys = 0, np = 0;  // attention grids (see EeCudaModel::run)
};

GraphPlan plan_graph(const EeCudaModel& m, bool mixed, int B);

// The graph of this plan and output mode, captured on first use. Graphs read the step's metadata
// from m.meta laid out for (B, SR) rows, so m.cur is set to that layout here. The capture holds
// api_mutex (see there for why).
// step_meta: called for a step being served (its metadata is in m.meta), not at startup. Then a
// failed capture does not fail the step: null is returned, the caller runs the step eagerly,
// m.no_graph remembers the plan so it is not retried, and the error is printed. At startup the
// error propagates (the model does not open).
cudaGraphExec_t graph_for(EeCudaModel& m, const GraphPlan& g, EeCudaModel::Out mode, bool step_meta);

// Every decode and mixed-step graph of every output mode: argmax, sampled, and logits for the host
// sampler (desc.capture_graphs), so no served step captures one.
void capture_all(EeCudaModel& m);

}  // namespace eec
