#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ee {

namespace {
// Candidates sorted first when top-p needs an order; the full vocabulary only if they fall short.
constexpr int kTopPCandidates = 4096;

// Order: larger value first, then smaller id (a fixed order makes sampling reproducible).
struct ByValue {
  const float* v;
  bool operator()(int32_t a, int32_t b) const { return v[a] > v[b] || (v[a] == v[b] && a < b); }
};
}  // namespace

void Sampler::note_token(Sequence& s, int32_t token, int vocab) {
  if (!s.req->uses_penalties()) return;
  if (s.seen.empty()) {
    s.seen.assign(size_t(vocab), 0);
    for (int i = 0; i < s.num_tokens(); ++i) s.seen[size_t(s.tokens[size_t(i)])] = 1;
  }
  if (token >= 0 && token < vocab) s.seen[size_t(token)] = 1;
  ++s.output_counts[token];
}

int32_t Sampler::choose(float* x, const RequestSpec& r, Rng& rng, SamplerScratch& sc) const {
  const int V = vocab_;
  if (r.temperature <= 0.0f) {  // greedy: first maximum
    int32_t best = 0;
    for (int i = 1; i < V; ++i)
      if (x[i] > x[best]) best = i;
    return best;
  }
  const float inv_t = 1.0f / r.temperature;
  for (int i = 0; i < V; ++i) x[i] *= inv_t;
  std::vector<int32_t>& idx = sc.idx;
  idx.resize(size_t(V));
  for (int i = 0; i < V; ++i) idx[size_t(i)] = i;
  int n = V;  // candidates idx[0, n)
  bool sorted = false;
  if (r.top_k > 0 && r.top_k < V) {
    std::nth_element(idx.begin(), idx.begin() + r.top_k, idx.end(), ByValue{x});
    n = r.top_k;
  }
  const float mx = k_->max_val(x, V);
  // Probabilities (unnormalised) of the candidates; everything else is out.
  std::vector<float>& p = sc.x;  // reused: x is already copied
  p.resize(size_t(V));
  float total = 0;
  bool id_order = n == V;  // idx is still 0..V-1
  if (n == V) {
    total = k_->exp_sum(x, V, mx, p.data());  // vectorised: the common no-top-k case
  } else {
    for (int i = 0; i < n; ++i) total += p[size_t(idx[size_t(i)])] = std::exp(x[idx[size_t(i)]] - mx);
  }
  if (r.min_p > 0.0f) {
    const float floor_p = r.min_p;  // relative to the max, whose weight is exp(0) = 1
    int m = 0;
    total = 0;
    for (int i = 0; i < n; ++i) {
      const int32_t t = idx[size_t(i)];
      if (p[size_t(t)] >= floor_p) {
        idx[size_t(m++)] = t;
        total += p[size_t(t)];
      }
    }
    n = m;
  }
  if (r.top_p < 1.0f) {
    auto by_p = [&](int32_t a, int32_t b) {
      return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b);
    };
    int c = std::min(n, kTopPCandidates);
    std::partial_sort(idx.begin(), idx.begin() + c, idx.begin() + n, by_p);
    float cum = 0, target = r.top_p * total;
    int keep = 0;
    while (keep < c && cum < target) cum += p[size_t(idx[size_t(keep++)])];
    if (cum < target && c < n) {  // the head was not enough: sort everything
      std::sort(idx.begin(), idx.begin() + n, by_p);
      cum = 0;
      keep = 0;
      while (keep < n && cum < target) cum += p[size_t(idx[size_t(keep++)])];
    }
    n = std::max(keep, 1);
    total = 0;
    for (int i = 0; i < n; ++i) total += p[size_t(idx[size_t(i)])];
    sorted = true;
  }
  if (!sorted && !id_order) std::sort(idx.begin(), idx.begin() + n);  // id order: deterministic walk
  const double u = rng.uniform() * double(total);
  double acc = 0;
  for (int i = 0; i < n; ++i) {
    acc += double(p[size_t(idx[size_t(i)])]);
    if (acc > u) return idx[size_t(i)];
  }
  return idx[size_t(n - 1)];
}

void Sampler::apply_mask(const float* logits, const uint32_t* mask, int vocab, float* out) {
  for (int w = 0; w * 32 < vocab; ++w) {
    const uint32_t bits = mask[w];
    const int end = std::min(vocab, w * 32 + 32);
    for (int t = w * 32; t < end; ++t) out[t] = (bits >> (t & 31)) & 1u ? logits[t] : -INFINITY;
  }
}

bool Sampler::allows_non_stop(const uint32_t* mask, int vocab, const std::vector<int32_t>& stops) {
  for (int w = 0; w * 32 < vocab; ++w) {
    uint32_t bits = mask[w];
    if (vocab - w * 32 < 32) bits &= (1u << (vocab - w * 32)) - 1u;
    for (const int32_t t : stops)
      if (t >= w * 32 && t < w * 32 + 32) bits &= ~(1u << (t & 31));
    if (bits) return true;
  }
  return false;
}

SampleOut Sampler::sample(const float* logits, Sequence& s, SamplerScratch& sc, const uint32_t* mask) const {
  const RequestSpec& r = *s.req;
  const int V = vocab_;
  SampleOut out;
  if (mask) {  // from here on the masked row is the model's output (logprobs included)
    sc.masked.resize(size_t(V));
    apply_mask(logits, mask, V, sc.masked.data());
    logits = sc.masked.data();
  }
  std::vector<float>& x = sc.processed;  // per-worker scratch: no allocation per token
  x.assign(logits, logits + V);
  for (size_t i = 0; i < r.logit_bias_ids.size(); ++i) {
    const int32_t t = r.logit_bias_ids[i];
    if (t >= 0 && t < V) x[size_t(t)] += r.logit_bias_values[i];
  }
  // min_tokens: stop ids get no probability (greedy skips them; sampling weighs them 0, or the
  // vectorised exp's floor e^-87 next to the maximum's 1).
  if (r.bans_stops(s.num_output()) && (!mask || allows_non_stop(mask, V, r.stop_token_ids)))
    for (const int32_t t : r.stop_token_ids)
      if (t >= 0 && t < V) x[size_t(t)] = -INFINITY;
  if (r.uses_penalties()) {
    if (s.seen.empty()) note_token(s, -1, V);  // builds the prompt's presence set
    if (r.repetition_penalty != 1.0f)
      for (int t = 0; t < V; ++t)
        if (s.seen[size_t(t)])
          x[size_t(t)] = x[size_t(t)] > 0 ? x[size_t(t)] / r.repetition_penalty : x[size_t(t)] * r.repetition_penalty;
    for (const auto& [t, c] : s.output_counts)
      if (t >= 0 && t < V) x[size_t(t)] -= r.frequency_penalty * float(c) + r.presence_penalty;
  }
  out.token = choose(x.data(), r, s.rng, sc);
  // The vectorised exp floors -inf at e^-87, so a disallowed token keeps a weight of ~1e-38; a draw
  // of exactly 0 could land on one. Never let it: the first allowed maximum instead.
  if (mask && !((mask[out.token >> 5] >> (out.token & 31)) & 1u)) {
    int32_t best = -1;
    for (int t = 0; t < V; ++t)
      if (((mask[t >> 5] >> (t & 31)) & 1u) && (best < 0 || x[size_t(t)] > x[size_t(best)])) best = t;
    if (best >= 0) out.token = best;
  }
  if (r.logprobs >= 0) {
    const float mx = k_->max_val(logits, V);
    const float lse = mx + std::log(k_->exp_sum(logits, V, mx, nullptr));
    out.logprob = logits[out.token] - lse;
    if (r.logprobs > 0) {
      const int k = std::min(r.logprobs, V);
      std::vector<int32_t>& idx = sc.idx;
      idx.resize(size_t(V));
      for (int i = 0; i < V; ++i) idx[size_t(i)] = i;
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), ByValue{logits});
      for (int i = 0; i < k; ++i) {
        out.top_ids.push_back(idx[size_t(i)]);
        out.top_logprobs.push_back(logits[idx[size_t(i)]] - lse);
      }
    }
  }
  return out;
}

}  // namespace ee
