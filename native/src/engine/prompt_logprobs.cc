#include "engine/prompt_logprobs.h"

#include <algorithm>
#include <cmath>

namespace ee {

void compute_prompt_logprobs(const cpu::Kernels* kernels, ThreadPool* pool, const float* rows, int n, int V,
                             const int32_t* next, int k, PromptLogprobs& out) {
  k = std::min(k, V);
  out.logprobs.resize(size_t(n));
  out.ranks.resize(size_t(n));
  out.top_ids.resize(size_t(n) * size_t(k));
  out.top_logprobs.resize(size_t(n) * size_t(k));
  std::vector<std::vector<int32_t>> idx(size_t(pool->size()));
  pool->run(n, [&](int i, int worker) {
    const float* x = rows + size_t(i) * size_t(V);
    const float mx = kernels->max_val(x, V);
    const float lse = mx + std::log(kernels->exp_sum(x, V, mx, nullptr));
    const float own = x[next[i]];
    int above = 0;
    for (int v = 0; v < V; ++v) above += x[v] > own;
    out.logprobs[size_t(i)] = own - lse;
    out.ranks[size_t(i)] = above + 1;
    if (k == 0) return;
    std::vector<int32_t>& ix = idx[size_t(worker)];
    ix.resize(size_t(V));
    for (int v = 0; v < V; ++v) ix[size_t(v)] = v;
    std::partial_sort(ix.begin(), ix.begin() + k, ix.end(),
                      [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
    for (int t = 0; t < k; ++t) {
      out.top_ids[size_t(i) * size_t(k) + size_t(t)] = ix[size_t(t)];
      out.top_logprobs[size_t(i) * size_t(k) + size_t(t)] = x[ix[size_t(t)]] - lse;
    }
  });
}

}  // namespace ee
