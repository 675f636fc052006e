// Attention microbenchmark (cpu/kernels.h attention) on the ERNIE-4.5-0.3B shape (16 query heads,
// 2 KV heads, head_dim 128, blocks of 16), with the KV cache in fp32 and in bf16 (fp32 math on both,
// as the precise paths run it), one thread, thread CPU time, the two interleaved, best of `reps`:
// - prefill: one sequence's causal attention over T tokens in the engine's tasks of 8 query tokens
//   (its K/V stay in cache: compute-bound);
// - decode: one query token after T keys for each of 64 sequences x 18 layers, each with its own
//   K/V (the 64-stream wave's decode steps: the cache is read from memory).
// Prints one JSON object per case. Run by tools/attn-bench.sh.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cpu/kernels.h"

using namespace ee;
using namespace ee::cpu;

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

constexpr int kHeads = 16, kKvHeads = 2, kHeadDim = 128, kBlock = 16;

// `caches` independent K/V caches of `keys` positions each, fp32 and the same values in bf16.
struct Caches {
  size_t per;  // elements per cache (K or V)
  std::vector<float> kf, vf;
  std::vector<bf16_t> kb, vb;
  Caches(int keys, int caches) {
    const int nb = (keys + kBlock - 1) / kBlock;
    per = size_t(nb) * kKvHeads * kHeadDim * kBlock;
    const size_t n = per * size_t(caches);
    kf.resize(n), vf.resize(n), kb.resize(n), vb.resize(n);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (size_t i = 0; i < n; ++i) {
      kf[i] = nd(rng), vf[i] = nd(rng);
      kb[i] = f32_to_bf16(kf[i]), vb[i] = f32_to_bf16(vf[i]);
    }
  }
  AttnLayer layer(int c, bool bf16) const {
    const size_t o = per * size_t(c);
    return AttnLayer{bf16 ? static_cast<const void*>(kb.data() + o) : static_cast<const void*>(kf.data() + o),
                     bf16 ? static_cast<const void*>(vb.data() + o) : static_cast<const void*>(vf.data() + o),
                     bf16,
                     kBlock,
                     kHeads,
                     kKvHeads,
                     kHeadDim,
                     0.08838835f};
  }
};

void report(const char* name, int keys, int caches, double flop, double bytes32, const double best[2]) {
  std::printf(
      "{\"case\":\"%s\",\"keys\":%d,\"caches\":%d,\"fp32Ms\":%.3f,\"bf16Ms\":%.3f,\"fp32Gflops\":%.1f,\"bf16Gflops\":%."
      "1f,"
      "\"fp32CacheGBs\":%.1f,\"bf16CacheGBs\":%.1f,\"bf16Speedup\":%.2f}\n",
      name, keys, caches, best[0] * 1e3, best[1] * 1e3, flop / best[0] / 1e9, flop / best[1] / 1e9,
      bytes32 / best[0] / 1e9, bytes32 / 2 / best[1] / 1e9, best[0] / best[1]);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const Kernels* k = select_kernels("");
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  for (int T : {128, 512}) {  // prefill
    Caches c(T, 1);
    const int nb = (T + kBlock - 1) / kBlock;
    std::vector<int32_t> bt(static_cast<size_t>(nb));
    for (int i = 0; i < nb; ++i) bt[size_t(i)] = i;
    std::vector<float> q(size_t(T) * kHeads * kHeadDim), out(q.size()),
        scratch(attention_scratch(c.layer(0, false), T));
    for (auto& x : q) x = nd(rng);
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; ++r)
      for (int bf = 0; bf < 2; ++bf) {
        const AttnLayer L = c.layer(0, bf != 0);
        const AttnSeq s{q.data(), out.data(), T, 0, bt.data()};
        const double t0 = cpu_seconds();
        for (int g = 0; g < kKvHeads; ++g)
          for (int t = 0; t < T; t += 8) k->attention(L, s, g, t, std::min(T, t + 8), scratch.data());
        best[bf] = std::min(best[bf], cpu_seconds() - t0);
      }
    const double keys = double(T) * (T + 1) / 2;
    report("prefill", T, 1, keys * kHeads * kHeadDim * 4, 0, best);
  }
  for (int T : {300, 576}) {  // decode: 64 sequences x 18 layers
    const int caches = 64 * 18, nb = (T + kBlock - 1) / kBlock;
    Caches c(T, caches);
    std::vector<int32_t> bt(static_cast<size_t>(nb));
    for (int i = 0; i < nb; ++i) bt[size_t(i)] = i;
    std::vector<float> q(size_t(kHeads) * kHeadDim), out(q.size()), scratch(attention_scratch(c.layer(0, false), T));
    for (auto& x : q) x = nd(rng);
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; ++r)
      for (int bf = 0; bf < 2; ++bf) {
        const double t0 = cpu_seconds();
        for (int i = 0; i < caches; ++i) {
          const AttnLayer L = c.layer(i, bf != 0);
          const AttnSeq s{q.data(), out.data(), 1, T - 1, bt.data()};
          for (int g = 0; g < kKvHeads; ++g) k->attention(L, s, g, 0, 1, scratch.data());
        }
        best[bf] = std::min(best[bf], cpu_seconds() - t0);
      }
    const double bytes = double(T) * kKvHeads * kHeadDim * 4 * 2 * caches;  // K and V, fp32
    report("decode, 64 sequences x 18 layers", T, caches, double(T) * kHeads * kHeadDim * 4 * caches, bytes, best);
  }
}
