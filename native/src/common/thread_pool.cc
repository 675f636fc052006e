#include "common/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include "common/assert.h"

namespace ee {

namespace {
// NOTE: the three durations below were chosen with `npm run bench:serve` (TTFT overhead of the
// HTTP path, 2 cores shared by the engine, the gateway, the sidecar's JS thread and the client;
// the figures: native/README.md).
// An idle worker pause-spins this long after its last task, then sleeps. A decode step's regions
// are a few microseconds apart, so this covers them; a worker that sleeps anyway only joins the
// next region late (the caller does not wait for it). Spinning longer (the old 20000 pauses) took
// cycles from the serving threads after every step and raised the overhead.
constexpr auto kIdleSpin = std::chrono::microseconds(100);
// The caller pause-spins this long on a task still running on another thread, then polls with
// sched_yield(): that thread may be waiting for this very core.
constexpr auto kWaitSpin = std::chrono::microseconds(20);
// A compute thread yields its core at a task boundary when this long has passed since its last
// yield. NOTE: with HZ=250 and nothing else yielding, a serving thread woken while both cores run
// compute threads could wait for the scheduler tick (4 ms); the yields bound that to this interval.
// They lowered the serving layers' latency and the first token's delivery, and a yield when
// nothing else wants the core costs a small fraction of the interval (native/README.md).
constexpr auto kYieldEvery = std::chrono::microseconds(500);

// Pause-spins until `done()` or `limit` has passed; true when done. The clock is read every 64
// pauses (a pause's duration differs between CPUs, so count-based limits would too).
template <typename Done>
bool spin_for(ThreadPool::Clock::duration limit, Done done) {
  const auto end = ThreadPool::Clock::now() + limit;
  for (int k = 1;; ++k) {
    if (done()) return true;
    if ((k & 63) == 0 && ThreadPool::Clock::now() >= end) return false;
    _mm_pause();
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int w = 1; w < n_threads_; ++w) threads_.emplace_back([this, w] { worker_main(w); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  state_.store(state_word(generation_of(state_.load()) + 1, 0));  // a generation of no tasks
  { std::lock_guard<std::mutex> lock(sleep_mu_); }
  sleep_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::drain(int worker, uint64_t& s, Clock::time_point& last_yield) {
  for (;;) {
    if (next_of(s) >= n_tasks_of(s)) return;
    if (const auto now = Clock::now(); now - last_yield >= kYieldEvery) {
      last_yield = now;
      sched_yield();
      s = state_.load(std::memory_order_acquire);
      continue;
    }
    // The claim: a CAS of the whole word. A failed one reloads s, so a worker holding a word of an
    // older generation never claims anything with it.
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_acquire)) continue;
    // Task next_of(s) of the current job is ours: the acquire above makes tramp_/ctx_ visible, and
    // the caller keeps them valid until completed_ counts this task.
    tramp_(ctx_, next_of(s), worker);
    completed_.fetch_add(1, std::memory_order_release);
    s = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::dispatch(int n_tasks, Trampoline tramp, void* ctx) {
  ENGINE_ASSERT(n_tasks <= kMaxTasks);
  uint64_t s = state_.load(std::memory_order_relaxed);
  // The previous region is over: every task claimed and completed, so no thread reads the old job.
  ENGINE_ASSERT(next_of(s) == n_tasks_of(s) && completed_.load(std::memory_order_relaxed) == n_tasks_of(s));
  tramp_ = tramp;
  ctx_ = ctx;
  completed_.store(0, std::memory_order_relaxed);
  s = state_word(generation_of(s) + 1, n_tasks);
  state_.store(s);  // seq_cst: publishes the job (release), and is ordered before the sleepers_ load
  if (sleepers_.load() > 0) {
    // Taking the mutex orders this notify after any sleeper's predicate check.
    { std::lock_guard<std::mutex> lock(sleep_mu_); }
    sleep_cv_.notify_all();
  }
  drain(0, s, caller_last_yield_);
  // Every task is claimed; wait only for those still running on other threads.
  auto done = [&] { return completed_.load(std::memory_order_acquire) == n_tasks; };
  if (spin_for(kWaitSpin, done)) return;
  while (!done()) sched_yield();
}

void ThreadPool::worker_main(int worker) {
  // Generation 0 is the constructor's (no tasks): a worker that starts after the first dispatch
  // still sees that one as new.
  uint64_t s = 0;
  uint32_t seen = 0;
  Clock::time_point last_yield{};
  for (;;) {
    if (!spin_for(kIdleSpin, [&] { return generation_of(s = state_.load(std::memory_order_acquire)) != seen; })) {
      std::unique_lock<std::mutex> lock(sleep_mu_);
      sleepers_.fetch_add(1);  // seq_cst: a dispatch after this sees a sleeper and notifies
      // seq_cst load: with dispatch's state_ store and sleepers_ load, no wake-up can be lost.
      sleep_cv_.wait(lock, [&] { return generation_of(s = state_.load()) != seen; });
      sleepers_.fetch_sub(1);
    }
    drain(worker, s, last_yield);
    // drain may have followed the word to a newer generation than the one that woke us, the
    // destructor's included: check stop_ for the last word seen (loaded with acquire).
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_of(s);
  }
}

}  // namespace ee
