// A persistent worker pool for the engine's parallel regions.
//
// Thread rules: exactly one thread (the engine step thread) calls run() at a time; the caller
// takes part as worker 0. A decode step has ~100 parallel regions of ~100-300 us each, so workers
// spin briefly between regions (a wake-up costs tens of microseconds) and only then sleep on a
// condition variable, so an idle server does not burn its cores.
// NOTE: the sleep used std::atomic::wait/notify_all first; with GCC 12's libstdc++ a worker was
// seen asleep in the futex after the generation had moved on (a lost wake-up: the step thread then
// spun forever in dispatch; caught by a hung CI run and gdb). A mutex + condition variable, with
// the notifier taking the mutex, cannot lose one.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ee {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(task, worker) for every task in [0, n_tasks), handing tasks out dynamically; returns
  // when all are done. Tasks must write disjoint outputs: results then do not depend on which
  // worker ran which task (the engine's batch- and thread-count-invariance rests on this).
  template <typename F>
  void run(int n_tasks, F&& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
      for (int t = 0; t < n_tasks; ++t) fn(t, 0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    dispatch(n_tasks, [](void* ctx, int task, int worker) { (*static_cast<Fn*>(ctx))(task, worker); },
             static_cast<void*>(&fn));
  }

 private:
  using Trampoline = void (*)(void*, int, int);
  void dispatch(int n_tasks, Trampoline tramp, void* ctx);
  void worker_main(int worker);
  void drain(int worker);

  int n_threads_;
  std::vector<std::thread> threads_;
  // Job slot, published by bumping generation_.
  Trampoline tramp_ = nullptr;
  void* ctx_ = nullptr;
  int n_tasks_ = 0;
  alignas(64) std::atomic<int> next_task_{0};
  alignas(64) std::atomic<int> busy_workers_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
};

}  // namespace ee
