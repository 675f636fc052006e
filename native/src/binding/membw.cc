#include "binding/membw.h"

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace ee {

double measure_read_bandwidth(ThreadPool& pool, size_t bytes) {
  const size_t n = bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[n]);
  for (size_t i = 0; i < n; ++i) buf[i] = i;  // touch every page
  const int parts = pool.size() * 8;
  std::vector<uint64_t> sink(static_cast<size_t>(parts), 0);
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    auto t0 = std::chrono::steady_clock::now();
    pool.run(parts, [&](int p, int) {
      const size_t b = n * size_t(p) / size_t(parts), e = n * size_t(p + 1) / size_t(parts);
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      size_t i = b;
      for (; i + 4 <= e; i += 4) {
        a0 += buf[i];
        a1 += buf[i + 1];
        a2 += buf[i + 2];
        a3 += buf[i + 3];
      }
      for (; i < e; ++i) a0 += buf[i];
      sink[size_t(p)] = a0 + a1 + a2 + a3;
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(n * sizeof(uint64_t)) / s);
  }
  volatile uint64_t keep = 0;
  for (uint64_t v : sink) keep = keep + v;
  (void)keep;
  return best;
}

double measure_compute_peak(ThreadPool& pool, double (*dot_peak)(long iters)) {
  constexpr long kIters = 2000000;  // ~0.1 s per thread
  const int tasks = pool.size();
  std::vector<double> flops(static_cast<size_t>(tasks), 0);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    auto t0 = std::chrono::steady_clock::now();
    pool.run(tasks, [&](int t, int) { flops[size_t(t)] = dot_peak(kIters); });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / s);
  }
  return best;
}

}  // namespace ee
