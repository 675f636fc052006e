#include "engine/grammar_bell.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#else
#include <condition_variable>
#include <mutex>
#endif

namespace ee::grammar_bell {
namespace {
using Clock = std::chrono::steady_clock;
// The count is a 32-bit word so that, on Linux, waiters block on it directly (a futex): one ring wakes
// every waiter in one system call and each returns on its own, where a condition variable's waiters
// would each take its mutex again on waking, one after another (a dozen grammar workers per ring).
std::atomic<uint32_t> count{0};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word");
std::atomic<int64_t> rung_ns{-1};  // Clock's epoch, ns
#ifndef __linux__
std::mutex mu;
std::condition_variable cv;
#endif

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
}  // namespace

void ring() {
  rung_ns.store(now_ns(), std::memory_order_relaxed);
#ifdef __linux__
  count.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&count), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  {
    // Under the mutex: a waiter checks the count and blocks under it, so no ring falls in between.
    std::lock_guard<std::mutex> lock(mu);
    count.fetch_add(1, std::memory_order_release);
  }
  cv.notify_all();
#endif
}

uint64_t value() { return count.load(std::memory_order_acquire); }

bool wait(uint64_t seen, double timeout_ms) {
  const uint32_t was = uint32_t(seen);
#ifdef __linux__
  const int64_t deadline = now_ns() + int64_t(timeout_ms * 1e6);
  for (;;) {
    if (count.load(std::memory_order_acquire) != was) return true;
    const int64_t left = deadline - now_ns();
    if (left <= 0) return false;
    const timespec ts{time_t(left / 1000000000), long(left % 1000000000)};
    // Blocks only while the word still holds `was` (the kernel compares it): a ring between the load
    // above and this call returns at once. Wakes, timeouts and signals all loop to the check.
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&count), FUTEX_WAIT_PRIVATE, was, &ts, nullptr, 0);
  }
#else
  std::unique_lock<std::mutex> lock(mu);
  return cv.wait_for(lock, std::chrono::duration<double, std::milli>(timeout_ms),
                     [&] { return count.load(std::memory_order_acquire) != was; });
#endif
}

double ms_since_ring() {
  const int64_t at = rung_ns.load(std::memory_order_relaxed);
  if (at < 0) return -1;
  return double(now_ns() - at) / 1e6;
}

}  // namespace ee::grammar_bell
