// Attention microbenchmark (cpu/kernels.h attention) on the ERNIE-4.5-0.3B shape (16 query heads,
// 2 KV heads, head_dim 128, blocks of 16), with the KV cache in fp32 and in bf16 (fp32 math on both,
// as the precise paths run it), and bf16 with bf16 dot products (q and P in bf16: the int8 path's and
// --dtype bfloat16's attention over a bf16 cache, where the ISA has AVX512-BF16), one thread, thread
// CPU time, the three interleaved, best of `reps`:
// - prefill: one sequence's causal attention over T tokens in the engine's tasks of 8 query tokens
//   (its K/V stay in cache: compute-bound);
// - decode: one query token after T keys for each of 64 sequences x 18 layers, each with its own
//   K/V (the 64-stream wave's decode steps: the cache is read from memory).
// Prints one JSON object per case. Run by tools/attn-bench.sh.
#include <immintrin.h>
#include <sys/mman.h>
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

// n elements of T in memory mapped as the engine maps its KV cache (model/kv_cache.cc: transparent
// huge pages asked for): with 4 KiB pages every block tile is a page of its own, and a decode step's
// walk is held up by page walks the engine does not have.
template <typename T>
struct Mapped {
  T* p = nullptr;
  size_t n = 0;
  void resize(size_t count) {
    n = count;
    p = static_cast<T*>(mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    madvise(p, n * sizeof(T), MADV_HUGEPAGE);
  }
  ~Mapped() {
    if (p) munmap(p, n * sizeof(T));
  }
  T& operator[](size_t i) { return p[i]; }
  T* data() const { return p; }
};

// `caches` independent K/V caches of `keys` positions each, fp32 and the same values in bf16.
struct Caches {
  size_t per;  // elements per cache (K or V)
  Mapped<float> kf, vf;
  Mapped<bf16_t> kb, vb;
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
  // variant: 0 fp32 cache, 1 bf16 cache with fp32 math, 2 bf16 cache with bf16 dot products.
  AttnLayer layer(int c, int variant) const {
    const size_t o = per * size_t(c);
    const bool bf16 = variant > 0;
    AttnLayer L{bf16 ? static_cast<const void*>(kb.data() + o) : static_cast<const void*>(kf.data() + o),
                bf16 ? static_cast<const void*>(vb.data() + o) : static_cast<const void*>(vf.data() + o),
                bf16,
                kBlock,
                kHeads,
                kKvHeads,
                kHeadDim,
                0.08838835f};
    L.bf16_dot = variant == 2;
    return L;
  }
};

void report(const char* name, int keys, int caches, double flop, double bytes32, const double best[3]) {
  std::printf(
      "{\"case\":\"%s\",\"keys\":%d,\"caches\":%d,\"fp32Ms\":%.3f,\"bf16Ms\":%.3f,\"bf16DotMs\":%.3f,"
      "\"fp32Gflops\":%.1f,\"bf16Gflops\":%.1f,\"bf16DotGflops\":%.1f,"
      "\"fp32CacheGBs\":%.1f,\"bf16CacheGBs\":%.1f,\"bf16DotCacheGBs\":%.1f,\"bf16Speedup\":%.2f,\"bf16DotSpeedup\":%."
      "2f}\n",
      name, keys, caches, best[0] * 1e3, best[1] * 1e3, best[2] * 1e3, flop / best[0] / 1e9, flop / best[1] / 1e9,
      flop / best[2] / 1e9, bytes32 / best[0] / 1e9, bytes32 / 2 / best[1] / 1e9, bytes32 / 2 / best[2] / 1e9,
      best[0] / best[1], best[0] / best[2]);
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
    std::vector<float> q(size_t(T) * kHeads * kHeadDim), out(q.size()), scratch(attention_scratch(c.layer(0, 0), T));
    for (auto& x : q) x = nd(rng);
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < reps; ++r)
      for (int bf = 0; bf < 3; ++bf) {
        const AttnLayer L = c.layer(0, bf);
        const AttnSeq s{q.data(), out.data(), T, 0, bt.data()};
        const double t0 = cpu_seconds();
        for (int g = 0; g < kKvHeads; ++g)
          for (int t = 0; t < T; t += 8) k->attention(L, s, g, t, std::min(T, t + 8), scratch.data());
        best[bf] = std::min(best[bf], cpu_seconds() - t0);
      }
    const double keys = double(T) * (T + 1) / 2;
    report("prefill", T, 1, keys * kHeads * kHeadDim * 4, 0, best);
  }
  for (int T : {300, 576}) {  // decode: 64 sequences x 18 layers, from memory and (one cache) from cache
    for (int distinct : {64 * 18, 1}) {
      const int calls = 64 * 18, nb = (T + kBlock - 1) / kBlock;
      // One cache of `distinct` sequences' blocks (sequence i: blocks i nb ..), as the engine's layer.
      Caches c(T, distinct);
      std::vector<int32_t> bt(size_t(nb) * distinct);
      for (size_t i = 0; i < bt.size(); ++i) bt[i] = int32_t(i);
      std::vector<float> q(size_t(kHeads) * kHeadDim), out(q.size()), scratch(attention_scratch(c.layer(0, 0), T));
      for (auto& x : q) x = nd(rng);
      double best[3] = {1e30, 1e30, 1e30};
      for (int r = 0; r < reps; ++r)
        for (int bf = 0; bf < 3; ++bf) {
          const AttnLayer L = c.layer(0, bf);
          const double t0 = cpu_seconds();
          for (int i = 0; i < calls; ++i) {
            const int32_t* table = bt.data() + size_t(i % distinct) * nb;
            const AttnSeq s{q.data(), out.data(), 1, T - 1, table};
            for (int g = 0; g < kKvHeads; ++g) k->attention(L, s, g, 0, 1, scratch.data());
          }
          best[bf] = std::min(best[bf], cpu_seconds() - t0);
        }
      // The memory floor of the bf16 cases from memory: every line of the bf16 K and V tiles read in
      // the same order, no math.
      if (distinct > 1) {
        double bestr = 1e30;
        __m512i acc = _mm512_setzero_si512();
        for (int r = 0; r < reps; ++r) {
          const double t0 = cpu_seconds();
          const size_t bsz = size_t(kKvHeads) * kHeadDim * kBlock;
          for (int i = 0; i < calls; ++i)
            for (int g = 0; g < kKvHeads; ++g)
              for (int b = 0; b < nb; ++b)
                for (const bf16_t* base : {c.kb.data(), c.vb.data()}) {
                  const bf16_t* t = base + size_t(bt[size_t(i) * nb + b]) * bsz + size_t(g) * kHeadDim * kBlock;
                  for (int l = 0; l < kHeadDim * kBlock / 32; ++l)
                    acc = _mm512_add_epi32(acc, _mm512_loadu_si512(t + 32 * l));
                }
          bestr = std::min(bestr, cpu_seconds() - t0);
        }
        volatile int keep = _mm512_reduce_add_epi32(acc);
        (void)keep;
        std::printf("{\"case\":\"decode, bf16 cache read alone\",\"keys\":%d,\"ms\":%.3f,\"GBs\":%.1f}\n", T,
                    bestr * 1e3, double(T) * kKvHeads * kHeadDim * 2 * 2 * calls / bestr / 1e9);
      }
      const double bytes = double(T) * kKvHeads * kHeadDim * 4 * 2 * calls;  // K and V, fp32
      report(distinct > 1 ? "decode, 64 sequences x 18 layers" : "decode, one sequence's cache 1152 times (in cache)",
             T, distinct, double(T) * kHeads * kHeadDim * 4 * calls, bytes, best);
    }
  }
}
