// The engine: owns the model runner, KV manager, scheduler and sampler, and runs the step loop on
// its own thread. Thread rules: submit/abort/stats are called from the Node thread and only touch
// the inbox and the stats snapshot (under mu_); everything else belongs to the step thread. Each
// step's outputs (all sequences' new tokens together) go to the sink once, from the step thread.
// NOTE: engine threads keep normal scheduling priority. SCHED_BATCH + nice 5 was tried: it delayed
// every request's first token through the server (the step thread's wake-up is deferred behind
// whatever Node thread is running), as bench:serve's single-request comparison showed
// (native/README.md).
#pragma once
#include <array>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/kv_manager.h"
#include "engine/prompt_logprobs.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "cpu/kernels.h"
#include "common/thread_pool.h"
#include "model/runner.h"

namespace ee {

struct EngineConfig {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  // No defaults here: the binding requires these from TS (max_model_len: --max-model-len or the TS
  // loader's default; max_n, max_logprobs: src/protocol/limits.ts), so each value has one source.
  int max_model_len = 0;
  int max_n = 0;          // choices per request
  int max_logprobs = 0;   // alternatives per token
  int prefill_batch = 1;  // see SchedulerConfig
  int prefill_max_wait = 8;
  bool prefix_caching = true;
  uint64_t seed = 0;
};

// A request's phases on the engine's clock (vLLM's intervals), reported once, on the output that
// finishes its last choice. queue: submit → first scheduled; prefill: first scheduled → first
// token (→ finish when none); decode: first → last token; inference: first scheduled → last token.
struct RequestTiming {
  bool set = false;
  double queue_s = 0, prefill_s = 0, decode_s = 0, inference_s = 0;
  int preemptions = 0;  // of all its choices
};

struct StepOutput {
  uint32_t id = 0;
  int index = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;      // per token (when requested)
  std::vector<int32_t> top_ids;     // per token, k each
  std::vector<float> top_logprobs;  // per token, k each
  Finish finish = Finish::None;
  int prompt_tokens = 0;
  int cached_tokens = 0;
  std::string error;
  PromptLogprobs prompt;  // choice 0: the prompt logprobs computed this step (start 0: none)
  RequestTiming timing;
};

// vLLM's vllm:iteration_tokens_total buckets (tokens computed per step).
inline constexpr std::array<int, 13> kIterationTokenBounds = {1,   8,    16,   32,   64,   128,  256,
                                                              512, 1024, 2048, 4096, 8192, 16384};

struct EngineStats {
  // waiting: sequences queued (the scheduler's queue and requests submitted but not yet taken in),
  // counted live: a submit is counted before it returns, so a limit read from it is exact.
  int running = 0, waiting = 0, kv_blocks_total = 0, kv_blocks_free = 0;
  // The largest running set after any step (forks included) and the most sequences ever waiting.
  int max_running = 0, max_waiting = 0;
  uint64_t fair_preemptions = 0;  // preemptions that seated a request under its share (fair_share.h)
  uint64_t preemptions = 0, prefix_queries = 0, prefix_hits = 0, prompt_tokens = 0, generation_tokens = 0, steps = 0;
  double step_ms = 0;
  // Structured output: the step thread's time waiting for grammar masks that were not there yet (ms).
  double mask_wait_ms = 0;
  // Steps that waited for masks, and summed over them the time from the grammar bell's last ring
  // (the previous step's tokens handed over) to the step thread starting to wait for this step's
  // rows (its forward queued), and to the last row there (ms): whether the masks overlap the forward.
  uint64_t mask_steps = 0;
  double mask_wait_from_ring_ms = 0, mask_done_from_ring_ms = 0;
  int last_step_tokens = 0, last_step_seqs = 0;
  // Steps by tokens computed: iteration_counts[b] = steps with at most kIterationTokenBounds[b]
  // tokens and more than the bound before (the last entry: above every bound).
  std::array<uint64_t, kIterationTokenBounds.size() + 1> iteration_counts{};
  uint64_t iteration_tokens_sum = 0;
  // The runner's phase profile after the last step, where it keeps one (has_profile).
  bool has_profile = false;
  RunnerProfile profile;
};

using StepSink = std::function<void(std::vector<StepOutput>&&)>;

class Engine {
 public:
  // host_kernels: the CPU kernels the sampler uses (whatever device the runner computes on).
  Engine(std::unique_ptr<IModelRunner> runner, const cpu::Kernels* host_kernels, ThreadPool* pool, EngineConfig cfg,
         StepSink sink);
  ~Engine();  // stops the loop; unfinished requests end with Finish::Abort
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Returns "" when queued, else why the request can never run (refused up front).
  std::string submit(RequestSpec spec);
  void abort(uint32_t id);
  // Pauses (true) or resumes (false) every choice of a request from the next step on: a paused
  // sequence keeps its KV blocks and is left out of the batch (its client's buffer is full). Unknown
  // or finished ids are ignored.
  void pause(uint32_t id, bool paused);
  EngineStats stats();
  // stats().waiting alone: what the sidecar checks against its queue limit on every submit.
  int waiting();
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  struct Request {
    std::shared_ptr<const RequestSpec> spec;
    std::vector<std::unique_ptr<Sequence>> seqs;
    int unfinished = 0;
    int cached_tokens = 0;
    bool paused = false;  // forks made while paused start paused
    Clock::time_point submitted, scheduled, first_token, last_token;
    bool was_scheduled = false, has_token = false;
  };

  void loop();
  bool drain_inbox(std::vector<StepOutput>& out);  // false when stopping
  void step(std::vector<StepOutput>& out);
  void finish_seq(Request& r, Sequence& s, Finish f, std::vector<StepOutput>& out, StepOutput* o);
  void fork_choices(Request& r, Sequence& parent, const float* logits, std::vector<StepOutput>& out);
  // posted: the token went to the grammar worker already (step(), before the outputs are built).
  void append(Request& r, Sequence& s, const SampleOut& so, std::vector<StepOutput>& out, bool posted = false);
  // Whether s ends on `token`, not yet appended: a stop id past min_tokens, max_tokens or the model's
  // length (what append decides).
  bool ends_on(const Sequence& s, int32_t token) const;
  void publish_stats(double step_ms, int tokens, int seqs);
  static RequestTiming timing_of(const Request& r);
  // An output with no token for choice `index` (prompt logprobs alone, or a finish).
  StepOutput& bare_output(const Request& r, int index, std::vector<StepOutput>& out);
  int live_waiting() const;  // under mu_
  // Whether this sequence's next token needs nothing but its raw logits row (no bias, no penalties,
  // no logprobs, no fork pending): then the runner may choose it where the logits are, greedily
  // (plain_greedy: a device argmax, which takes no parameters) or with the device sampler
  // (device_samplable: temperature sampling, or greedy with the min_tokens ban of at most
  // DeviceSampling::kMaxBans stop ids, which the device sampler applies).
  static bool raw_logits_suffice(const Sequence& s);
  // Structured output: the mask rows for the next token of a step's sequences. Called after the
  // forward pass is queued (the sidecar's grammar workers compute them meanwhile, once they have each
  // sequence's previous token): waits until each row is written for its sequence's output length,
  // taking the rows in the order they are published. A slot with copy_to set gets its row copied
  // there as soon as it is published (row then points at the copy), so copying a step's rows overlaps
  // the wait for the slower ones; else row points into the request's buffer. Sequences without a
  // grammar get kNone at once. An abort of the request (or stop) ends the wait: kAborted; kFailed:
  // the grammar worker gave up on the choice.
  enum class MaskWait { kNone, kReady, kAborted, kFailed };
  struct MaskSlot {
    const Sequence* seq = nullptr;  // null: no row wanted
    uint32_t* copy_to = nullptr;
    const uint32_t* row = nullptr;
    MaskWait wait = MaskWait::kNone;
  };
  void await_masks(std::vector<MaskSlot>& slots);
  bool abort_pending(uint32_t id);  // under mu_
  // Ends a choice that gets no token this step (MaskWait kAborted: Abort; kFailed: Error).
  void end_unmasked(Request& r, Sequence& s, MaskWait w, std::vector<StepOutput>& out);
  static bool plain_greedy(const Sequence& s);
  static bool device_samplable(const Sequence& s);

  std::unique_ptr<IModelRunner> runner_;
  ThreadPool* pool_;
  const cpu::Kernels* host_kernels_;
  EngineConfig cfg_;
  StepSink sink_;
  KvManager kv_;
  Scheduler sched_;
  Sampler sampler_;
  std::vector<SamplerScratch> scratch_;
  std::vector<float> logits_;                       // step logits rows [rows, vocab], kept across steps
  std::unordered_map<uint32_t, Request> requests_;  // step thread only
  uint64_t arrivals_ = 0;
  uint64_t prompt_tokens_ = 0, generation_tokens_ = 0, steps_ = 0, fair_preemptions_ = 0;
  uint64_t mask_wait_ns_ = 0;
  uint64_t mask_steps_ = 0;
  double mask_wait_from_ring_ms_ = 0, mask_done_from_ring_ms_ = 0;
  bool grammar_posted_ = false;  // a constrained token was posted this step: ring the grammar bell
  Rng seed_rng_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<RequestSpec, Clock::time_point>> inbox_;  // with when submit() took it
  std::vector<uint32_t> aborts_;
  std::vector<std::pair<uint32_t, bool>> pauses_;
  std::unordered_set<uint32_t> live_ids_;  // accepted and not yet finished (duplicate check)
  bool stop_ = false;
  int sched_waiting_ = 0;  // the scheduler's queue at the last publish_stats
  int in_transit_ = 0;     // taken from the inbox since then
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace ee
