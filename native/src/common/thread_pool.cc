#include "common/thread_pool.h"

#include <immintrin.h>

#include "common/assert.h"

namespace ee {

namespace {
// ~50-100 us of spinning before a worker sleeps.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int w = 1; w < n_threads_; ++w) threads_.emplace_back([this, w] { worker_main(w); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
  }
  sleep_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::drain(int worker) {
  for (;;) {
    int t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    tramp_(ctx_, t, worker);
  }
}

void ThreadPool::dispatch(int n_tasks, Trampoline tramp, void* ctx) {
  ENGINE_ASSERT(busy_workers_.load(std::memory_order_acquire) == 0);
  tramp_ = tramp;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: ordered before the sleepers_ load below
  if (sleepers_.load() > 0) {
    // Taking the mutex orders this notify after any sleeper's predicate check.
    { std::lock_guard<std::mutex> lock(sleep_mu_); }
    sleep_cv_.notify_all();
  }
  drain(0);
  while (busy_workers_.load(std::memory_order_acquire) != 0) _mm_pause();
}

void ThreadPool::worker_main(int worker) {
  uint32_t seen = generation_.load(std::memory_order_acquire);
  for (;;) {
    uint32_t g;
    int spins = 0;
    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        _mm_pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(sleep_mu_);
      sleepers_.fetch_add(1);  // seq_cst: a dispatch after this sees a sleeper and notifies
      sleep_cv_.wait(lock, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      spins = 0;
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    drain(worker);
    busy_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace ee
