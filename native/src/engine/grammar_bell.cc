#include "engine/grammar_bell.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace ee::grammar_bell {
namespace {
using Clock = std::chrono::steady_clock;
std::mutex mu;
std::condition_variable cv;
std::atomic<uint64_t> count{0};
std::atomic<int64_t> rung_ns{-1};  // Clock's epoch, ns
}  // namespace

void ring() {
  rung_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(),
                std::memory_order_relaxed);
  {
    // Under the mutex: a waiter checks the count and blocks under it, so no ring falls in between.
    std::lock_guard<std::mutex> lock(mu);
    count.fetch_add(1, std::memory_order_release);
  }
  cv.notify_all();
}

uint64_t value() { return count.load(std::memory_order_acquire); }

bool wait(uint64_t seen, double timeout_ms) {
  std::unique_lock<std::mutex> lock(mu);
  return cv.wait_for(lock, std::chrono::duration<double, std::milli>(timeout_ms),
                     [&] { return count.load(std::memory_order_acquire) != seen; });
}

double ms_since_ring() {
  const int64_t at = rung_ns.load(std::memory_order_relaxed);
  if (at < 0) return -1;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  return double(now - at) / 1e6;
}

}  // namespace ee::grammar_bell
