// Kernel microbenchmark of the int8 GEMMs (cpu/qgemm.h) beside the bf16 GEMM, on the shapes of
// ERNIE-4.5-0.3B (hidden 1024, MLP 3072, vocab 103,424): decode (M = 1), a batched decode step
// (M = 16, 64) and a 512-token prefill. Each call is the engine's: prepare the activations, then the
// weight rows in 128-row tasks (model_runner.cc), on one thread. Time is the thread's CPU time, so
// that other processes on a loaded host take little from the figures (cache and memory bandwidth
// they share still do), and the kernels are interleaved (A B A B ...), best of `reps` per kernel.
// With -DEE_QGEMM_BASELINE the binary also holds a second AVX512-VNNI kernel (namespace
// avx512_base, built from another revision by tools/qgemm-bench.sh) to compare against.
// Each kernel's instruction peak (its dot_peak loop: 24 independent multiply-adds, one thread) is
// timed in the same run, and each case reports executed ops against it (`ofPeak`), its CPU time in
// TSC ticks (`refCyclesPerCall`: reference cycles at the TSC's fixed rate, `tscGHz`; VMs without a
// PMU have no core cycle counter, so `peakInstrPerRefCycle` gives the peak loop's rate on the same
// scale) and, for int8, the activation preparation alone (`prepareMs`).
// Prints one JSON object. Run by tools/qgemm-bench.sh.
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/qgemm.h"

#ifdef EE_QGEMM_BASELINE
namespace ee::cpu::avx512_base {
extern const Int8Kernels kInt8Kernels;
}
#endif

using namespace ee;
using namespace ee::cpu;

namespace {

constexpr int kTaskRows = 128;  // model_runner.cc's kGemmRowsPerTask

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::string load_average() {
  FILE* f = std::fopen("/proc/loadavg", "r");
  double a = 0, b = 0, c = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3) a = b = c = 0;
    std::fclose(f);
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.2f, %.2f, %.2f]", a, b, c);
  return buf;
}

std::string cpu_model() {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  std::string model = "unknown";
  char line[512];
  while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    std::string l(line);
    if (l.rfind("model name", 0) == 0 && l.find(':') != std::string::npos) {
      model = l.substr(l.find(':') + 2);
      while (!model.empty() && (model.back() == '\n' || model.back() == '"')) model.pop_back();
      break;
    }
  }
  if (f != nullptr) std::fclose(f);
  return model;
}

struct Shape {
  const char* what;
  int M, N, K;
  int mats = 1;  // distinct copies of the weights, used in turn (more than the caches hold: read from memory)
};

// One kernel under test: runs a whole GEMM (prepare + every task) once.
struct Case {
  std::string name;
  int planes;
  std::function<void()> run;
  double (*peak)(long iters);          // the kernel's dot_peak (ops per call of `iters`)
  std::function<void()> prepare = {};  // the activation preparation alone (int8 cases)
};

// Ops/s of a dot_peak loop on this thread, best of 9 (CPU time).
double peak_rate(double (*peak)(long iters)) {
  double best = 0;
  for (int r = 0; r < 9; ++r) {
    const double t0 = cpu_seconds();
    const double ops = peak(1000000);
    best = std::max(best, ops / (cpu_seconds() - t0));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string baseline = argc > 2 ? argv[2] : "";
  const Shape shapes[] = {
      {"decode, gate+up", 1, 6144, 1024},
      {"decode, down", 1, 1024, 3072},
      {"decode, lm_head", 1, 103424, 1024},
      {"batch 16, gate+up", 16, 6144, 1024},
      {"batch 64, gate+up", 64, 6144, 1024},
      {"prefill 512, gate+up", 512, 6144, 1024},
      {"prefill 512, down", 512, 1024, 3072},
      {"prefill 512, qkv", 512, 2560, 1024},
      {"prefill 512, o", 512, 1024, 2048},
      // A batched decode step as the engine runs it: every layer's weights come from memory.
      {"batch 40, gate+up, from memory", 40, 6144, 1024, 24},
      {"batch 40, down, from memory", 40, 1024, 3072, 48},
      {"batch 40, lm_head, from memory", 40, 103424, 1024, 2},
  };
  std::vector<std::pair<std::string, const Int8Kernels*>> int8;
  for (const char* isa : {"avx512", "avxvnni", "avx2"})
    if (const Int8Kernels* k = select_int8_kernels(isa)) int8.emplace_back(k->isa, k);
#ifdef EE_QGEMM_BASELINE
  int8.emplace_back("avx512vnni (baseline)", &avx512_base::kInt8Kernels);
#endif
  const Kernels* bf16 = select_kernels("avx512");
  if (bf16 == nullptr) bf16 = select_kernels("avx2");

  std::printf(
      "{\n  \"cpu\": \"%s\",\n  \"timing\": \"one thread, thread CPU time, best of %d, kernels interleaved\",\n",
      cpu_model().c_str(), reps);
  if (!baseline.empty()) std::printf("  \"baseline\": \"avx512vnni kernel of revision %s\",\n", baseline.c_str());
  // The instruction peaks, one thread: int8 ops/s (2 per multiply-add) and bf16 FLOP/s.
  std::vector<std::pair<std::string, double (*)(long)>> peaks;
  for (const auto& [name, k] : int8) peaks.emplace_back("int8 " + name, k->dot_peak);
  peaks.emplace_back(std::string("bf16 ") + bf16->isa, bf16->dot_peak);
  std::vector<double> peak_ops(peaks.size());
  const unsigned long long tsc0 = __rdtsc();
  const double tsc_t0 = wall_seconds();
  for (size_t i = 0; i < peaks.size(); ++i) peak_ops[i] = peak_rate(peaks[i].second);
  const double tsc_hz = double(__rdtsc() - tsc0) / (wall_seconds() - tsc_t0);  // the TSC's fixed rate
  std::printf("  \"tscGHz\": %.3f,\n  \"peaksGopsPerCore\": {", tsc_hz / 1e9);
  for (size_t i = 0; i < peaks.size(); ++i)
    std::printf("%s\"%s\": %.1f", i ? ", " : "", peaks[i].first.c_str(), peak_ops[i] / 1e9);
  // Dot-product instructions per TSC tick: vpdpbusd zmm 128 ops each, ymm (AVX-VNNI) 64, vdpbf16ps zmm
  // 64 FLOP (the AVX2 int8 path has no single dot instruction).
  std::printf("},\n  \"peakInstrPerRefCycle\": {");
  bool first_peak = true;
  for (size_t i = 0; i < peaks.size(); ++i) {
    const std::string& n = peaks[i].first;
    const double per = n == "int8 avx512vnni" ? 128 : n == "int8 avxvnni" || n.rfind("bf16", 0) == 0 ? 64 : 0;
    if (per == 0) continue;
    std::printf("%s\"%s\": %.3f", first_peak ? "" : ", ", n.c_str(), peak_ops[i] / per / tsc_hz);
    first_peak = false;
  }
  std::printf("},\n");
  auto peak_of = [&](double (*f)(long)) {
    for (size_t i = 0; i < peaks.size(); ++i)
      if (peaks[i].second == f) return peak_ops[i];
    return peak_rate(f);
  };
  std::printf("  \"loadAverageStart\": %s,\n  \"shapes\": [\n", load_average().c_str());
  bool first_shape = true;
  const std::string only = argc > 3 ? argv[3] : "";  // shapes whose name contains this, else all
  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.what).find(only) == std::string::npos) continue;
    std::mt19937 rng(uint32_t(s.M * 7 + s.N + s.K));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<bf16_t> w(size_t(s.N) * s.K);
    for (auto& v : w) v = f32_to_bf16(u(rng));
    std::vector<float> x(size_t(s.M) * s.K);
    for (auto& v : x) v = 3.0f * u(rng);
    std::vector<float> y(size_t(s.M) * s.N);
    // Weights as the loader makes them: Q32 int8 (+ scales, sums) and V32 bf16.
    std::vector<int8_t> q(packed_bytes8(s.N, s.K));
    std::vector<float> sw(size_t(s.N));
    std::vector<int32_t> ws(size_t(s.N));
    quantize_rows(w.data(), s.N, s.K, q.data(), sw.data(), ws.data(), 0, s.N);
    // The copies (the same values: what differs is where they are).
    std::vector<std::vector<int8_t>> copies(size_t(s.mats - 1), q);
    std::vector<QMatrix> qms{QMatrix{q.data(), sw.data(), ws.data()}};
    for (auto& c : copies) qms.push_back(QMatrix{c.data(), sw.data(), ws.data()});
    size_t turn = 0;
    std::vector<bf16_t> wp(packed_elems(s.N, s.K));
    pack_matrix(w.data(), s.N, s.K, wp.data(), 0, s.N);
    std::vector<uint8_t> act(std::max(act8_bytes(s.M, s.K, true), bf16->act_bytes(s.M, s.K)) + 64);

    std::vector<Case> cases;
    for (bool precise : {true, false}) {
      for (const auto& [name, k] : int8)
        cases.push_back({"int8 " + name + (precise ? ", 2 planes" : ", 1 plane"), precise ? 2 : 1,
                         [&, k, precise] {
                           Act a;
                           a.M = s.M, a.K = s.K, a.Kp = pad_k8(s.K), a.precise = precise, a.data = act.data();
                           k->prepare_act(x.data(), s.K, a, 0, s.M);
                           const QMatrix& qm = qms[turn++ % qms.size()];
                           for (int n0 = 0; n0 < s.N; n0 += kTaskRows)
                             k->gemm(a, qm, s.N, n0, std::min(s.N, n0 + kTaskRows), y.data(), s.N);
                         },
                         k->dot_peak,
                         [&, k, precise] {
                           Act a;
                           a.M = s.M, a.K = s.K, a.Kp = pad_k8(s.K), a.precise = precise, a.data = act.data();
                           k->prepare_act(x.data(), s.K, a, 0, s.M);
                         }});
      if (s.mats == 1)  // (the bf16 weights are one copy: not a from-memory figure)
        cases.push_back({std::string("bf16 ") + bf16->isa + (precise ? ", 2 planes" : ", 1 plane"), precise ? 2 : 1,
                         [&, precise] {
                           Act a;
                           a.M = s.M, a.K = s.K, a.Kp = pad_k(s.K), a.precise = precise, a.data = act.data();
                           bf16->prepare_act(x.data(), s.K, a, 0, s.M);
                           for (int n0 = 0; n0 < s.N; n0 += kTaskRows)
                             bf16->gemm(a, wp.data(), s.N, n0, std::min(s.N, n0 + kTaskRows), y.data(), s.N);
                         },
                         bf16->dot_peak});
    }
    // Enough calls per timing for ~20 ms at 100 GOP/s.
    const double ops = 2.0 * s.M * s.N * s.K;
    const int calls = std::max(1, int(2e9 / ops));
    std::vector<double> best(cases.size(), 1e30), best_prep(cases.size(), 1e30);
    for (int r = 0; r < reps; ++r)
      for (size_t c = 0; c < cases.size(); ++c) {
        const double t0 = cpu_seconds();
        for (int i = 0; i < calls; ++i) cases[c].run();
        best[c] = std::min(best[c], (cpu_seconds() - t0) / calls);
        if (cases[c].prepare) {
          const double t1 = cpu_seconds();
          for (int i = 0; i < calls; ++i) cases[c].prepare();
          best_prep[c] = std::min(best_prep[c], (cpu_seconds() - t1) / calls);
        }
      }
    std::printf("%s    {\"what\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"kernels\": [\n", first_shape ? "" : ",\n",
                s.what, s.M, s.N, s.K);
    first_shape = false;
    for (size_t c = 0; c < cases.size(); ++c) {
      std::printf(
          "      {\"kernel\": \"%s\", \"ms\": %.4f, \"refCyclesPerCall\": %.0f, \"gops\": %.1f, \"executedGops\": "
          "%.1f, "
          "\"ofPeak\": %.3f",
          cases[c].name.c_str(), best[c] * 1e3, best[c] * tsc_hz, ops / best[c] / 1e9,
          ops * cases[c].planes / best[c] / 1e9, ops * cases[c].planes / best[c] / peak_of(cases[c].peak));
      if (cases[c].prepare) std::printf(", \"prepareMs\": %.4f", best_prep[c] * 1e3);
      std::printf("}%s\n", c + 1 < cases.size() ? "," : "");
    }
    std::printf("    ]}");
    std::fflush(stdout);
  }
  std::printf("\n  ],\n  \"loadAverageEnd\": %s\n}\n", load_average().c_str());
  return 0;
}
