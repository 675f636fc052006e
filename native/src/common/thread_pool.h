// A persistent worker pool for the engine's parallel regions.
//
// Thread rules: exactly one thread (the engine step thread) calls run() at a time; the caller
// takes part as worker 0. A decode step has ~100 parallel regions (a few per layer), each short,
// so workers spin briefly between regions (a wake-up costs tens of microseconds) and only then
// sleep on a condition variable, so an idle server does not burn its cores.
//
// Contract of one region (a "generation"):
//   - The job (trampoline + context) and the task count are published together with a new
//     generation in one 64-bit word, state_ = generation | n_tasks | next. A task is claimed by a
//     CAS of that word (next -> next + 1); a claim therefore names its generation, and a worker
//     still holding an older word fails its CAS instead of claiming a task of the wrong job. (After
//     2^24 generations a stale word could match again; its claim is then one of the current job,
//     which the worker reads after claiming, so even that is a valid claim.)
//   - A worker reads the job only after a successful claim; the job stays valid until every
//     claimed task has finished (the caller waits for that before returning, and only then writes
//     the next job).
//   - The caller waits for completed tasks == n_tasks, never for the workers themselves: a worker
//     that has not woken up (or was preempted) before the caller claimed the last task is not
//     waited for. Only a task that is in flight on another thread can make the caller wait, and
//     it then yields its core after a short spin.
//   - Compute threads (caller included) yield their core at task boundaries every ~0.5 ms, so the
//     serving threads that share the cores are not kept waiting for a scheduler tick.
// NOTE: the pool used to count workers out (busy_workers_ == 0) and spin-wait on that; on 2 cores
// shared with the gateway and the sidecar's JS thread, a worker preempted before it had claimed a
// task held up the step until it was scheduled again, while the spinning caller occupied the core
// it needed (issue #5: TTFT overhead of the HTTP path).
// NOTE: the sleep used std::atomic::wait/notify_all first; with GCC 12's libstdc++ a worker was
// seen asleep in the futex after the generation had moved on (a lost wake-up: the step thread then
// spun forever in dispatch; caught by a hung CI run and gdb). A mutex + condition variable, with
// the notifier taking the mutex, cannot lose one.
#pragma once
#include <atomic>
#include <chrono>
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

  using Clock = std::chrono::steady_clock;

  // Calls fn(task, worker) for every task in [0, n_tasks), handing tasks out dynamically; returns
  // when all are done. Tasks must write disjoint outputs: results then do not depend on which
  // worker ran which task (the engine's batch- and thread-count-invariance rests on this).
  // `worker` is in [0, size()) and no two tasks run at the same time with the same `worker`.
  template <typename F>
  void run(int n_tasks, F&& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
      for (int t = 0; t < n_tasks; ++t) fn(t, 0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    dispatch(
        n_tasks, [](void* ctx, int task, int worker) { (*static_cast<Fn*>(ctx))(task, worker); },
        static_cast<void*>(&fn));
  }

 private:
  using Trampoline = void (*)(void*, int, int);
  // state_ layout: [generation: 24 bits | n_tasks: 20 bits | next: 20 bits].
  static constexpr int kIndexBits = 20;
  static constexpr uint64_t kIndexMask = (uint64_t(1) << kIndexBits) - 1;
  static constexpr int kMaxTasks = int(kIndexMask);
  static uint64_t state_word(uint32_t generation, int n_tasks) {
    return (uint64_t(generation & 0xffffff) << (2 * kIndexBits)) | (uint64_t(n_tasks) << kIndexBits);
  }
  static uint32_t generation_of(uint64_t s) { return uint32_t(s >> (2 * kIndexBits)); }
  static int n_tasks_of(uint64_t s) { return int((s >> kIndexBits) & kIndexMask); }
  static int next_of(uint64_t s) { return int(s & kIndexMask); }

  void dispatch(int n_tasks, Trampoline tramp, void* ctx);
  void worker_main(int worker);
  // Claims and runs tasks of whatever generation state_ holds, starting from the word `s` (left
  // holding the last word seen), until none is left. `last_yield`: the calling thread's last yield.
  void drain(int worker, uint64_t& s, Clock::time_point& last_yield);

  int n_threads_;
  std::vector<std::thread> threads_;
  // The current job; written by the caller only while no task of the previous one is in flight.
  Trampoline tramp_ = nullptr;
  void* ctx_ = nullptr;
  Clock::time_point caller_last_yield_{};  // the run() caller's (one thread at a time)
  alignas(64) std::atomic<uint64_t> state_{0};
  // Tasks of the current generation finished, by any thread (the caller included).
  alignas(64) std::atomic<int> completed_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
};

}  // namespace ee
