// The CUDA model runner's profiler (ERNIE_CUDA_PROFILE, read with the other switches in
// env_switches.h), host side only: see the modes below.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "env_switches.h"
#include "kernels.cuh"

namespace eec {

// Host timings of the profile.
using Clock = std::chrono::steady_clock;
inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
inline double ms_since(Clock::time_point t) { return ms_between(t, Clock::now()); }

// Profile labels: steps grouped by rows.
inline int row_bucket(int n) {
  for (int b : {16, 64, 256, 512, 1024, 2048, 4096})
    if (n <= b) return b;
  return 1 << 30;
}

// ERNIE_CUDA_PROFILE=1: time every operation of eager steps with events (synchronising after each:
// for finding where a step's time goes, never for serving) and print the table when the model is
// destroyed. "graph": graphs stay on and replays are timed whole. "step": nothing synchronises
// inside a step; each step's host preparation, host launch time and GPU time (events around the
// launches) are summed per shape and row bucket, which shows whether eager steps wait on the host.
struct Profiler {
  explicit Profiler(const EnvSwitches& env)
      : on(env.profile), ops(on && env.profile_mode != "graph" && env.profile_mode != "step"),
        steps(on && env.profile_mode == "step") {}
  bool on;
  bool ops;  // per op (eager)
  bool steps;
  cudaEvent_t a = nullptr, b = nullptr;
  std::map<std::string, std::pair<double, long>> ms;  // op -> (total ms, calls)
  void record_a(cudaStream_t s) {
    if (!a) {
      cudaEventCreate(&a);
      cudaEventCreate(&b);
    }
    cudaEventRecord(a, s);
  }
  // Per op / per graph replay (modes 1 and graph): synchronises at end(). Per op, a spin kernel
  // queued first keeps the GPU busy while the host launches the op (cuBLAS's host work alone is
  // several us), so the events bracket GPU work only.
  void begin(cudaStream_t s) {
    if (!on || steps) return;
    if (ops) spin(50000, s);
    record_a(s);
  }
  void end(cudaStream_t s, const std::string& op) {
    if (!on || steps) return;
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    auto& e = ms[op];
    e.first += t;
    e.second += 1;
  }
  void host(const std::string& op, double t) {
    if (!on) return;
    auto& e = ms[op];
    e.first += t;
    e.second += 1;
  }
  // Step mode: (prep, launch, gpu, total) ms and rows summed per "shape.rows-bucket".
  struct StepSum {
    double prep = 0, launch = 0, gpu = 0, total = 0;
    long rows = 0, n = 0;
  };
  std::map<std::string, StepSum> step_sums;
  // Around a step's launches (mode step): events only, read by step() after the step's own sync.
  void step_begin(cudaStream_t s) {
    if (steps) record_a(s);
  }
  void step_end(cudaStream_t s) {
    if (steps) cudaEventRecord(b, s);
  }
  void step(const std::string& key, int rows, double prep, double launch, double total) {
    float gpu = 0;
    cudaEventElapsedTime(&gpu, a, b);
    auto& e = step_sums[key];
    e.prep += prep;
    e.launch += launch;
    e.gpu += gpu;
    e.total += total;
    e.rows += rows;
    e.n += 1;
  }
  // Per-step quantities (rows, tiles) summed per label, printed as means beside the op table.
  std::map<std::string, std::pair<double, long>> counts;  // label -> (sum, steps)
  void count(const std::string& label, double v) {
    auto& e = counts[label];
    e.first += v;
    e.second += 1;
  }
  void print() const {
    for (auto& [k, v] : counts)
      std::fprintf(stderr, "[cuda profile] mean %-28s %10.1f over %ld steps\n", k.c_str(), v.first / double(v.second),
                   v.second);
    if (steps && !step_sums.empty()) {
      std::fprintf(stderr,
                   "[cuda steps] shape.rows, steps, mean rows, host prep ms, host launch ms, gpu ms, call ms (means), "
                   "call total ms\n");
      for (auto& [k, v] : step_sums) {
        const double n = double(v.n);
        std::fprintf(stderr, "[cuda steps] %-16s %6ld %7.0f %7.3f %7.3f %7.3f %7.3f %9.1f\n", k.c_str(), v.n,
                     double(v.rows) / n, v.prep / n, v.launch / n, v.gpu / n, v.total / n, v.total);
      }
    }
    if (!on || ms.empty()) return;
    double total = 0;
    for (auto& [k, v] : ms) total += v.first;
    std::fprintf(stderr, "[cuda profile] op, total ms, calls, us/call, share\n");
    for (auto& [k, v] : ms)
      std::fprintf(stderr, "[cuda profile] %-28s %10.2f %8ld %9.1f %5.1f%%\n", k.c_str(), v.first, v.second,
                   1000.0 * v.first / double(v.second), 100.0 * v.first / total);
  }
};

}  // namespace eec
