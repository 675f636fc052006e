// Kernel microbenchmark of the AMX-BF16 GEMM on the ERNIE-4.5-0.3B layer shapes (hidden 1024, q 2048,
// kv 256, MLP 3072), the way the model runner calls it: the activations prepared in 16-row tasks,
// then the weight rows in tasks of --task-rows outputs, on a pool of T threads (the caller included).
// Per shape, kernel variant and thread count: wall time of the GEMM (best of `reps`, variants
// interleaved), TFLOP/s executed (both planes when precise) and its share of the tiles' peak measured
// on the same threads (tdpbf16ps on four accumulators, no loads), and whether its outputs are the same
// bits as the first variant's. Variants come from tools/amx-bench.sh: this tree's kernel (amx) and
// copies of amx.cc built with other parameters or from other revisions under other namespaces.
// Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/kernels.h"

using namespace ee;
using namespace ee::cpu;

namespace ee::cpu::avx512 {
extern const Kernels kKernels;
}
namespace ee::cpu::amx {
size_t act_bytes(int M, int K);
void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1);
void gemm_bf16(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy);
Act act_rows(const Act& a, int m0, int m1);
double dot_peak_bf16(long iters);
}  // namespace ee::cpu::amx

// Other variants (amx-bench.sh writes EE_BENCH_HEADER): EE_DECL(ns) declares a copy of this tree's
// amx.cc built under namespace ns (its own activation layout), EE_DECL_OLD(ns) one from a revision
// whose AMX-BF16 kernel read the AVX-512 kernels' row-major layout; the header then defines
// EE_BENCH_VARIANTS as a list of EE_NEW(ns, label) / EE_OLD(ns, label), the first the reference for
// sameBits.
#define EE_DECL(ns)                                                                        \
  namespace ee::cpu::ns {                                                                  \
  size_t act_bytes(int M, int K);                                                          \
  void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1);                 \
  void gemm_bf16(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy); \
  }
#define EE_DECL_OLD(ns)                                                                    \
  namespace ee::cpu::ns {                                                                  \
  void gemm_bf16(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy); \
  }
#ifdef EE_BENCH_HEADER
#include EE_BENCH_HEADER
#endif

namespace {

using GemmFn = void (*)(const Act&, const bf16_t*, int, int, int, float*, int);
struct Variant {
  std::string name;
  size_t (*act_bytes)(int, int);
  void (*prepare)(const float*, int, const Act&, int, int);
  GemmFn gemm;
  int task_rows;
  int task_m = 0;  // input rows per task (this tree's kernel only; 0: all M rows)
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Shape {
  const char* what;
  int N, K;
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::vector<int> threads_list;
  for (const char* p = argc > 2 ? argv[2] : "16,2"; *p;) {
    threads_list.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  if (select_kernels("amx") == nullptr) {
    std::printf("{\"skipped\": \"no usable AMX on this CPU\"}\n");
    return 0;
  }
  std::vector<Variant> variants;
#define EE_NEW(ns, label) variants.push_back({label, ns::act_bytes, ns::prepare_act, ns::gemm_bf16, 128, 64});
#define EE_OLD(ns, label) \
  variants.push_back({label, avx512::kKernels.act_bytes, avx512::kKernels.prepare_act, ns::gemm_bf16, 128});
#ifdef EE_BENCH_VARIANTS
  EE_BENCH_VARIANTS
#endif
  // Tasks of task_m input rows x task_rows outputs (the rows' activations and the outputs' weights in L2),
  // as the model runner's GEMMs of 256 rows and more; the variants above run the same shape.
  variants.push_back({"this tree, 32-row tasks", amx::act_bytes, amx::prepare_act, amx::gemm_bf16, 32});
  for (const auto& [tm, tn] : std::vector<std::pair<int, int>>{{64, 128}})
    variants.push_back({"this tree, " + std::to_string(tm) + " rows x " + std::to_string(tn) + " outputs",
                        amx::act_bytes, amx::prepare_act, amx::gemm_bf16, tn, tm});
  const Shape shapes[] = {{"qkv", 2560, 1024}, {"o", 1024, 2048}, {"gate+up", 6144, 1024}, {"down", 1024, 3072}};
  const int layers = 18;
  struct Run {
    int M;
    bool precise;
  };
  const Run runs[] = {{512, true}, {512, false}, {64, true}};
  std::printf("{\n  \"timing\": \"wall time per GEMM, best of %d, variants interleaved\",\n  \"results\": [\n", reps);
  bool first = true;
  // NOTE: each measurement runs on a pool of fresh threads (its caller too): the variants keep their
  // tile configuration per thread under their own namespace's key, and a revision that releases the
  // tiles after each call would leave another variant's key naming a configuration no longer loaded.
  auto on_fresh_threads = [](int T, const std::function<void(ThreadPool&)>& fn) {
    std::thread th([&] {
      ThreadPool pool(T);
      fn(pool);
    });
    th.join();
  };
  for (int T : threads_list) {
    // The tiles' peak on T threads at once.
    const long iters = 200000;
    double best_peak = 0;
    for (int r = 0; r < 3; ++r)
      on_fresh_threads(T, [&](ThreadPool& pool) {
        std::vector<double> ops(static_cast<size_t>(T));
        const double t0 = now_s();
        pool.run(T, [&](int task, int) { ops[size_t(task)] = amx::dot_peak_bf16(iters); });
        const double dt = now_s() - t0;
        double sum = 0;
        for (double o : ops) sum += o;
        best_peak = std::max(best_peak, sum / dt);
      });
    for (const Run& run : runs) {
      std::vector<double> total_ms(variants.size(), 0);
      for (const Shape& s : shapes) {
        const int M = run.M, N = s.N, K = s.K;
        std::mt19937 rng(uint32_t(M * 7 + N + K));
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<bf16_t> w(size_t(N) * K);
        for (auto& v : w) v = f32_to_bf16(u(rng));
        std::vector<bf16_t> wp(packed_elems(N, K));
        pack_matrix(w.data(), N, K, wp.data(), 0, N);
        std::vector<float> x(size_t(M) * K);
        for (auto& v : x) v = 3.0f * u(rng);
        std::vector<std::vector<float>> ys(variants.size(), std::vector<float>(size_t(M) * N));
        size_t act = 0;
        for (const Variant& v : variants) act = std::max(act, v.act_bytes(M, K));
        std::vector<uint8_t> buf(act + 64);
        // The model runner's step buffers are 64-byte aligned (model_runner.h).
        uint8_t* const act_data = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
        auto call = [&](ThreadPool& pool, size_t vi) {
          const Variant& v = variants[vi];
          Act a;
          a.M = M, a.K = K, a.Kp = pad_k(K), a.precise = run.precise, a.data = act_data;
          pool.run((M + 15) / 16, [&](int t, int) { v.prepare(x.data(), K, a, 16 * t, std::min(M, 16 * t + 16)); });
          const int tasks = (N + v.task_rows - 1) / v.task_rows;
          float* y = ys[vi].data();
          const int tm = v.task_m > 0 && v.task_m < M ? v.task_m : M;
          const int mt = (M + tm - 1) / tm;
          pool.run(tasks * mt, [&](int t, int) {
            const int n0 = (t % tasks) * v.task_rows, m0 = (t / tasks) * tm;
            if (tm == M) v.gemm(a, wp.data(), N, n0, std::min(N, n0 + v.task_rows), y, N);
            else
              v.gemm(amx::act_rows(a, m0, std::min(M, m0 + tm)), wp.data(), N, n0, std::min(N, n0 + v.task_rows),
                     y + size_t(m0) * N, N);
          });
        };
        const double flops = 2.0 * M * N * K * (run.precise ? 2 : 1);
        std::vector<double> best(variants.size(), 1e30);
        const int calls = std::max(2, int(2e10 / flops / 16 * T));
        for (int r = 0; r < reps; ++r)
          for (size_t vi = 0; vi < variants.size(); ++vi)
            on_fresh_threads(T, [&](ThreadPool& pool) {
              call(pool, vi);  // warm-up (the outputs compared below)
              const double t0 = now_s();
              for (int c = 0; c < calls; ++c) call(pool, vi);
              best[vi] = std::min(best[vi], (now_s() - t0) / calls);
            });
        for (size_t vi = 0; vi < variants.size(); ++vi) {
          const bool same = std::memcmp(ys[vi].data(), ys[0].data(), ys[0].size() * sizeof(float)) == 0;
          total_ms[vi] += best[vi] * 1e3 * layers;
          std::printf(
              "%s    {\"threads\": %d, \"M\": %d, \"precise\": %s, \"shape\": \"%s\", \"N\": %d, \"K\": %d, "
              "\"kernel\": \"%s\", \"ms\": %.4f, \"tflops\": %.3f, \"shareOfPeak\": %.3f, \"sameBits\": %s}",
              first ? "" : ",\n", T, M, run.precise ? "true" : "false", s.what, N, K, variants[vi].name.c_str(),
              best[vi] * 1e3, flops / best[vi] / 1e12, flops / best[vi] / best_peak, same ? "true" : "false");
          first = false;
        }
        std::fflush(stdout);
      }
      for (size_t vi = 0; vi < variants.size(); ++vi)
        std::printf(
            ",\n    {\"threads\": %d, \"M\": %d, \"precise\": %s, \"shape\": \"all 18 layers\", \"kernel\": \"%s\", "
            "\"ms\": %.3f, \"gemmOnlyTokS\": %.0f, \"peakTflops\": %.3f}",
            T, run.M, run.precise ? "true" : "false", variants[vi].name.c_str(), total_ms[vi],
            run.M / (total_ms[vi] / 1e3), best_peak / 1e12);
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
