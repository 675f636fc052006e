#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "common/assert.h"
#include "engine/grammar_bell.h"

namespace ee {

Engine::Engine(std::unique_ptr<IModelRunner> runner, const cpu::Kernels* host_kernels, ThreadPool* pool,
               EngineConfig cfg, StepSink sink)
    : runner_(std::move(runner)), pool_(pool), host_kernels_(host_kernels), cfg_(cfg), sink_(std::move(sink)),
      kv_(runner_->num_blocks(), runner_->block_size(), cfg.prefix_caching),
      sched_(kv_,
             SchedulerConfig{cfg.max_num_seqs, cfg.max_num_batched_tokens, cfg.prefill_batch, cfg.prefill_max_wait}),
      sampler_(host_kernels, runner_->config().vocab_size), scratch_(size_t(pool->size())), seed_rng_(cfg.seed) {
  runner_->reserve(cfg.max_num_batched_tokens);  // a step's scratch is part of the footprint at load
  publish_stats(0, 0, 0);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

namespace {
constexpr float kGreedyTemperature = 1e-5f;
}  // namespace

std::string Engine::submit(RequestSpec r) {
  const int V = runner_->config().vocab_size, bs = kv_.block_size();
  const int P = int(r.prompt.size());
  if (P == 0) return "the prompt is empty";
  for (int32_t t : r.prompt)
    if (t < 0 || t >= V)
      return "prompt token id " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(V) + ")";
  if (r.max_tokens < 0) return "max_tokens must not be negative";
  if (r.n < 1 || r.n > cfg_.max_n) return "n must be between 1 and " + std::to_string(cfg_.max_n);
  if (r.n > cfg_.max_num_seqs)
    return "n=" + std::to_string(r.n) + " choices need " + std::to_string(r.n) +
           " sequences running together but max_num_seqs is " + std::to_string(cfg_.max_num_seqs);
  if (r.logprobs > cfg_.max_logprobs || r.prompt_logprobs > cfg_.max_logprobs)
    return "logprobs may ask for at most " + std::to_string(cfg_.max_logprobs) + " alternatives";
  if (!(r.temperature >= 0) || !(r.top_p > 0 && r.top_p <= 1) || !(r.min_p >= 0 && r.min_p <= 1) || r.top_k < 0 ||
      !(r.repetition_penalty > 0) || r.min_tokens < 0)
    return "invalid sampling parameters";
  // NOTE: a temperature below kGreedyTemperature is greedy, as 0 is (vLLM's _SAMPLING_EPS; the gateway
  // applies the same rule, src/gateway/sampling.ts). The samplers divide logits by it in fp32, where a
  // subnormal temperature overflows the quotient and the draw becomes noise: applied here, no client of
  // the engine protocol can reach them with one.
  if (r.temperature < kGreedyTemperature) r.temperature = 0.0f;
  if (int64_t(P) + r.max_tokens > cfg_.max_model_len)
    return "this request needs " + std::to_string(int64_t(P) + r.max_tokens) + " tokens (" + std::to_string(P) +
           " in the prompt + " + std::to_string(r.max_tokens) + " to generate), more than max_model_len " +
           std::to_string(cfg_.max_model_len);
  if (r.grammar && r.mask_words != (V + 31) / 32)
    return "a grammar mask needs " + std::to_string((V + 31) / 32) + " words per row (vocabulary " + std::to_string(V) +
           "), got " + std::to_string(r.mask_words);
  const int64_t blocks = (int64_t(P) + r.max_tokens + bs - 1) / bs;
  if (blocks > kv_.pool().num_blocks())
    return "this request needs " + std::to_string(blocks) + " KV blocks but the cache has only " +
           std::to_string(kv_.pool().num_blocks()) + " (raise --kv-cache-memory)";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return "the engine is shutting down";
    if (!live_ids_.insert(r.id).second) return "request id " + std::to_string(r.id) + " is already in use";
    inbox_.emplace_back(std::move(r), Clock::now());
    stats_.max_waiting = std::max(stats_.max_waiting, live_waiting());
  }
  cv_.notify_one();
  return "";
}

void Engine::abort(uint32_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborts_.push_back(id);
  }
  cv_.notify_one();
}

int Engine::live_waiting() const { return sched_waiting_ + in_transit_ + int(inbox_.size()); }

void Engine::pause(uint32_t id, bool paused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pauses_.emplace_back(id, paused);
  }
  cv_.notify_one();
}

EngineStats Engine::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s = stats_;
  s.waiting = live_waiting();
  return s;
}

int Engine::waiting() {
  std::lock_guard<std::mutex> lock(mu_);
  return live_waiting();
}

void Engine::publish_stats(double step_ms, int tokens, int seqs) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.running = int(sched_.running().size());
  sched_waiting_ = int(sched_.waiting().size());
  in_transit_ = 0;
  stats_.waiting = live_waiting();
  stats_.max_running = std::max(stats_.max_running, stats_.running);
  stats_.max_waiting = std::max(stats_.max_waiting, stats_.waiting);
  stats_.kv_blocks_total = kv_.pool().num_blocks();
  stats_.kv_blocks_free = kv_.pool().num_free();
  stats_.preemptions = sched_.preemptions();
  stats_.fair_preemptions = fair_preemptions_;
  stats_.prefix_queries = kv_.queries;
  stats_.prefix_hits = kv_.hits;
  stats_.prompt_tokens = prompt_tokens_;
  stats_.generation_tokens = generation_tokens_;
  stats_.steps = steps_;
  stats_.has_profile = runner_->profile(&stats_.profile);  // on the step thread, between steps
  stats_.mask_wait_ms = double(mask_wait_ns_) / 1e6;
  stats_.mask_steps = mask_steps_;
  stats_.mask_wait_from_ring_ms = mask_wait_from_ring_ms_;
  stats_.mask_done_from_ring_ms = mask_done_from_ring_ms_;
  if (seqs > 0) {
    size_t b = 0;
    while (b < kIterationTokenBounds.size() && tokens > kIterationTokenBounds[b]) ++b;
    ++stats_.iteration_counts[b];
    stats_.iteration_tokens_sum += uint64_t(tokens);
    stats_.step_ms = step_ms;
    stats_.last_step_tokens = tokens;
    stats_.last_step_seqs = seqs;
  }
}

void Engine::finish_seq(Request& r, Sequence& s, Finish f, std::vector<StepOutput>& out, StepOutput* o) {
  if (s.finish != Finish::None) return;
  s.finish = f;
  sched_.remove(&s);
  --r.unfinished;
  if (!o) o = &bare_output(r, s.index, out);
  o->finish = f;
  if (r.unfinished == 0) o->timing = timing_of(r);
}

StepOutput& Engine::bare_output(const Request& r, int index, std::vector<StepOutput>& out) {
  out.push_back({});
  StepOutput& o = out.back();
  o.id = r.spec->id;
  o.index = index;
  o.prompt_tokens = int(r.spec->prompt.size());
  o.cached_tokens = r.cached_tokens;
  return o;
}

RequestTiming Engine::timing_of(const Request& r) {
  const auto now = Clock::now();
  auto secs = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  RequestTiming t;
  t.set = true;
  for (const auto& s : r.seqs) t.preemptions += s->preemptions;
  if (!r.was_scheduled) {
    t.queue_s = secs(r.submitted, now);
    return t;
  }
  t.queue_s = secs(r.submitted, r.scheduled);
  if (!r.has_token) {
    t.prefill_s = t.inference_s = secs(r.scheduled, now);
    return t;
  }
  t.prefill_s = secs(r.scheduled, r.first_token);
  t.decode_s = secs(r.first_token, r.last_token);
  t.inference_s = secs(r.scheduled, r.last_token);
  return t;
}

bool Engine::drain_inbox(std::vector<StepOutput>& out) {
  std::vector<std::pair<RequestSpec, Clock::time_point>> inbox;
  std::vector<uint32_t> aborts;
  std::vector<std::pair<uint32_t, bool>> pauses;
  bool stopping;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || !inbox_.empty() || !aborts_.empty() || !requests_.empty(); });
    inbox.swap(inbox_);
    in_transit_ += int(inbox.size());  // still waiting, until publish_stats counts them in the scheduler
    aborts.swap(aborts_);
    pauses.swap(pauses_);
    stopping = stop_;
  }
  for (auto& [spec, submitted] : inbox) {
    auto sp = std::make_shared<RequestSpec>(std::move(spec));
    Request& r = requests_[sp->id];
    r.spec = sp;
    r.submitted = submitted;
    auto s = std::make_unique<Sequence>();
    s->req = sp;
    s->tokens = sp->prompt;
    s->prompt_len = int(sp->prompt.size());
    s->rng = Rng(sp->has_seed ? sp->seed : seed_rng_.next());
    s->arrival = arrivals_++;
    sched_.add(s.get());
    r.seqs.push_back(std::move(s));
    r.unfinished = 1;
    prompt_tokens_ += sp->prompt.size();
  }
  for (const auto& [id, paused] : pauses) {  // in call order: the last call for an id wins
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    it->second.paused = paused;
    for (auto& s : it->second.seqs) s->paused = paused;
  }
  if (stopping)
    for (auto& [id, r] : requests_) aborts.push_back(id);
  for (uint32_t id : aborts) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;  // unknown or already finished: abort is idempotent
    for (auto& s : it->second.seqs) finish_seq(it->second, *s, Finish::Abort, out, nullptr);
  }
  return !stopping;
}

bool Engine::ends_on(const Sequence& s, int32_t token) const {
  const RequestSpec& r = *s.req;
  const int outputs = s.num_output() + 1;
  const auto& stops = r.stop_token_ids;
  if (outputs > r.min_tokens && std::find(stops.begin(), stops.end(), token) != stops.end()) return true;
  return outputs >= r.max_tokens || s.num_tokens() + 1 >= cfg_.max_model_len;
}

void Engine::append(Request& r, Sequence& s, const SampleOut& so, std::vector<StepOutput>& out, bool posted) {
  out.push_back({});
  StepOutput& o = out.back();
  o.id = r.spec->id;
  o.index = s.index;
  o.prompt_tokens = s.prompt_len;
  o.cached_tokens = r.cached_tokens;
  o.tokens.push_back(so.token);
  r.last_token = Clock::now();
  if (!r.has_token) r.first_token = r.last_token;
  r.has_token = true;
  if (r.spec->logprobs >= 0) {
    o.logprobs.push_back(so.logprob);
    o.top_ids = so.top_ids;
    o.top_logprobs = so.top_logprobs;
  }
  s.tokens.push_back(so.token);
  Sampler::note_token(s, so.token, runner_->config().vocab_size);
  ++generation_tokens_;
  const auto& stops = r.spec->stop_token_ids;
  // Under min_tokens a stop id cannot be sampled; if one still came (every other logit was -inf) it
  // does not end the sequence either, as in vLLM (num_output already counts this token).
  const bool may_stop = s.num_output() > r.spec->min_tokens;
  if (may_stop && std::find(stops.begin(), stops.end(), so.token) != stops.end())
    finish_seq(r, s, Finish::Stop, out, &o);
  else if (s.num_output() >= r.spec->max_tokens || s.num_tokens() >= cfg_.max_model_len)
    finish_seq(r, s, Finish::Length, out, &o);
  // A constrained choice that goes on: its token to the grammar worker now (rung once per step, in
  // step()), not through the step callback, so its next mask is computed while this thread finishes
  // the step and runs the next forward pass. Most were posted before the outputs were built (step()).
  ENGINE_ASSERT(!posted || s.finish == Finish::None);  // ends_on agreed
  if (r.spec->grammar && s.finish == Finish::None && !posted) {
    r.spec->post_token(s.index, so.token, s.num_output());
    grammar_posted_ = true;
  }
}

// Choices 1..n-1 of a request start from choice 0's prefill: same blocks (copy-on-write for the
// shared partial block), same logits row, each its own random stream.
void Engine::fork_choices(Request& r, Sequence& parent, const float* logits, std::vector<StepOutput>& out) {
  parent.forked = true;
  for (int i = 1; i < r.spec->n; ++i) {
    auto c = std::make_unique<Sequence>();
    c->req = r.spec;
    c->index = i;
    c->tokens.assign(parent.tokens.begin(), parent.tokens.begin() + parent.prompt_len);
    c->prompt_len = parent.prompt_len;
    uint64_t base = r.spec->has_seed ? r.spec->seed : parent.rng.next();
    uint64_t mix = base + 0x9E3779B97F4A7C15ull * uint64_t(i);
    c->rng = Rng(Rng::splitmix(mix));
    c->arrival = parent.arrival;
    c->forked = true;
    c->paused = r.paused;
    kv_.fork(parent, *c);
    sched_.add_running(c.get());
    ++r.unfinished;
    Sequence& cref = *c;
    r.seqs.push_back(std::move(c));
    std::vector<MaskSlot> slot(1);
    slot[0].seq = &cref;
    await_masks(slot);
    if (slot[0].wait == MaskWait::kAborted || slot[0].wait == MaskWait::kFailed) {
      end_unmasked(r, cref, slot[0].wait, out);
      continue;
    }
    SampleOut so = sampler_.sample(logits, cref, scratch_[0], slot[0].row);
    append(r, cref, so, out);
  }
}

void Engine::step(std::vector<StepOutput>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  SchedulerOutput so = sched_.schedule();
  fair_preemptions_ += uint64_t(so.fair_preempted);
  if (so.seqs.empty()) {  // nothing fits this instant (cannot last: see Scheduler), or all are paused
    // Paused sequences wait for a resume, an abort or a new request, each of which notifies; the
    // timeout only bounds a missed wake-up.
    const auto wait = std::chrono::milliseconds(sched_.all_paused() ? 100 : 1);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [&] { return stop_ || !inbox_.empty() || !aborts_.empty() || !pauses_.empty(); });
    return;
  }
  std::vector<std::pair<int, int>> copies;
  for (const BlockCopy& c : so.copies) copies.emplace_back(c.src, c.dst);
  std::vector<SeqSlice> slices;
  std::vector<int> row_of(so.seqs.size(), -1);
  // Prompt logprobs: positions [lo, hi) of a slice whose rows are all computed (lo == hi: none).
  std::vector<std::pair<int, int>> prompt_rows(so.seqs.size(), {0, 0});
  std::vector<int> row_first(so.seqs.size(), 0);
  bool any_all_rows = false;
  int rows = 0;
  // Where the tokens are chosen: on the device when every sampled row is plain greedy (argmax) or
  // device-samplable (temperature / top-k / top-p / min-p drawn with the sequence's own uniform, or
  // greedy; either with min_tokens' stop ids banned); else the logits come to the host sampler.
  bool greedy_only = runner_->has_device_argmax(), device_only = greedy_only;
  for (size_t i = 0; i < so.seqs.size(); ++i) {
    const Scheduled& sc = so.seqs[i];
    Sequence& s = *sc.seq;
    Request& req = requests_[s.req->id];
    if (!req.was_scheduled) req.scheduled = Clock::now();
    req.was_scheduled = true;
    bool all_rows = false;
    if (s.wants_prompt_rows()) {  // rows at positions q predict prompt token q + 1, due from prompt_lp_next
      const int lo = std::max(s.num_computed, s.prompt_lp_next - 1),
                hi = std::min(s.num_computed + sc.n, s.prompt_len - 1);
      if (lo < hi) prompt_rows[i] = {lo, hi};
      all_rows = lo < hi;
    }
    any_all_rows = any_all_rows || all_rows;
    slices.push_back({s.tokens.data() + s.num_computed, sc.n, s.num_computed, s.block_table.data(),
                      int(s.block_table.size()),
                      all_rows    ? SeqSlice::kAll
                      : sc.sample ? SeqSlice::kLast
                                  : SeqSlice::kNone});
    row_first[i] = rows;
    if (all_rows) rows += sc.n - (sc.sample ? 1 : 0);
    if (sc.sample) {
      row_of[i] = rows++;
      const bool greedy = plain_greedy(s);
      greedy_only = greedy_only && greedy;
      device_only = device_only && (greedy || (runner_->has_device_sampling() && device_samplable(s)));
    }
  }
  if (any_all_rows) greedy_only = device_only = false;  // the prompt rows' logits come to the host
  std::vector<float>& logits = logits_;                 // reused: 64 rows of a 103k vocabulary are 26 MB per step
  std::vector<int32_t> argmax;
  // Grammar masks: waited for after the forward pass is queued (device path: in the runner's fill
  // call, before the sampling kernel; host path: after the forward), so their computation overlaps it.
  std::vector<MaskSlot> masks(so.seqs.size());
  // copy_to(i): where row i's mask goes (null: read in place); the rows come in publication order.
  auto await_step_masks = [&](const std::function<uint32_t*(size_t)>& copy_to) {
    bool any = false;
    for (size_t i = 0; i < so.seqs.size(); ++i)
      if (row_of[i] >= 0 && so.seqs[i].seq->req->max_tokens > 0 && so.seqs[i].seq->req->grammar) {
        masks[i].seq = so.seqs[i].seq;
        masks[i].copy_to = copy_to ? copy_to(i) : nullptr;
        any = true;
      }
    const double from_ring = any ? grammar_bell::ms_since_ring() : -1;
    await_masks(masks);
    if (from_ring >= 0) {
      ++mask_steps_;
      mask_wait_from_ring_ms_ += from_ring;
      mask_done_from_ring_ms_ += grammar_bell::ms_since_ring();
    }
  };
  auto unmasked = [&](size_t i) { return masks[i].wait == MaskWait::kAborted || masks[i].wait == MaskWait::kFailed; };
  Status st = runner_->copy_blocks(copies);
  if (st.is_ok() && !greedy_only && device_only) {
    const auto fill = [&](std::vector<DeviceSampling>& params, uint32_t* mask_rows, int mask_words) {
      ENGINE_ASSERT(params.size() == size_t(rows));
      ENGINE_ASSERT(mask_words == (runner_->config().vocab_size + 31) / 32);
      await_step_masks([&](size_t i) { return mask_rows + size_t(row_of[i]) * size_t(mask_words); });
      for (size_t i = 0; i < so.seqs.size(); ++i) {
        if (row_of[i] < 0) continue;
        Sequence& s = *so.seqs[i].seq;
        if (plain_greedy(s)) continue;  // temperature 0, nothing banned: argmax on the device
        const RequestSpec& r = *s.req;
        DeviceSampling& p = params[size_t(row_of[i])];
        p.temperature = r.temperature;
        p.top_p = r.top_p;
        p.min_p = r.min_p;
        p.top_k = r.top_k;
        // One uniform per sampled token, from the sequence's stream, as the host sampler draws it
        // (greedy draws none there either).
        p.u = r.temperature > 0.0f ? float(s.rng.uniform()) : 0.0f;
        const uint32_t* mask = masks[i].row;  // the copy in mask_rows
        if (r.bans_stops(s.num_output()) &&
            (!mask || Sampler::allows_non_stop(mask, runner_->config().vocab_size, r.stop_token_ids))) {
          p.n_ban = int(r.stop_token_ids.size());  // <= kMaxBans: device_samplable
          std::copy(r.stop_token_ids.begin(), r.stop_token_ids.end(), p.ban);
        }
        p.masked = mask != nullptr;  // not for a row whose wait ended it (aborted, failed): its token is dropped
      }
    };
    st = runner_->forward_sample(slices, fill, argmax);
  } else if (st.is_ok()) {
    st = greedy_only ? runner_->forward_argmax(slices, argmax) : runner_->forward(slices, logits);
  }
  if (!st.is_ok()) {  // a value, not a crash: the requests of this step fail
    for (const Scheduled& sc : so.seqs) {
      Request& r = requests_[sc.seq->req->id];
      for (auto& s : r.seqs) finish_seq(r, *s, Finish::Error, out, nullptr);
      for (auto& o : out)
        if (o.id == r.spec->id) o.error = st.message();
    }
    return;
  }
  std::vector<SampleOut> samples(so.seqs.size());
  const int V = runner_->config().vocab_size;
  std::vector<PromptLogprobs> prompt_lps(so.seqs.size());
  for (size_t i = 0; i < so.seqs.size(); ++i) {
    const auto [lo, hi] = prompt_rows[i];
    if (lo >= hi) continue;
    Sequence& s = *so.seqs[i].seq;
    const float* first = logits.data() + size_t(row_first[i] + (lo - s.num_computed)) * V;
    compute_prompt_logprobs(host_kernels_, pool_, first, hi - lo, V, s.tokens.data() + lo + 1, s.req->prompt_logprobs,
                            prompt_lps[i]);
    prompt_lps[i].start = lo + 1;
    s.prompt_lp_next = hi + 1;
  }
  if (device_only) {
    for (size_t i = 0; i < so.seqs.size(); ++i)
      if (row_of[i] >= 0) samples[i].token = argmax[size_t(row_of[i])];
  } else {
    await_step_masks(nullptr);
    pool_->run(int(so.seqs.size()), [&](int i, int worker) {
      if (row_of[size_t(i)] < 0 || so.seqs[size_t(i)].seq->req->max_tokens == 0 || unmasked(size_t(i))) return;
      samples[size_t(i)] = sampler_.sample(logits.data() + size_t(row_of[size_t(i)]) * V, *so.seqs[size_t(i)].seq,
                                           scratch_[size_t(worker)], masks[size_t(i)].row);
    });
  }
  // Constrained choices that go on hand their token to the grammar workers here and the bell rings
  // before this step's outputs are built (hundreds of them): the next masks are computed meanwhile.
  // A choice 0 about to fork posts in append, after its forks (fork_choices).
  std::vector<char> posted(so.seqs.size(), 0);
  for (size_t i = 0; i < so.seqs.size(); ++i) {
    const Sequence& s = *so.seqs[i].seq;
    const RequestSpec& r = *s.req;
    if (row_of[i] < 0 || !r.grammar || r.max_tokens == 0 || unmasked(i)) continue;
    if ((s.index == 0 && !s.forked && r.n > 1) || ends_on(s, samples[i].token)) continue;
    r.post_token(s.index, samples[i].token, s.num_output() + 1);
    posted[i] = 1;
    grammar_posted_ = true;
  }
  if (grammar_posted_) {
    grammar_posted_ = false;
    grammar_bell::ring();
  }
  for (size_t i = 0; i < so.seqs.size(); ++i) {
    Sequence& s = *so.seqs[i].seq;
    Request& r = requests_[s.req->id];
    s.num_computed += so.seqs[i].n;
    kv_.commit(s);
    PromptLogprobs* plp = prompt_lps[i].start > 0 ? &prompt_lps[i] : nullptr;
    if (row_of[i] < 0) {
      if (plp) bare_output(r, s.index, out).prompt = std::move(*plp);
      continue;
    }
    if (s.index == 0 && s.num_output() == 0) r.cached_tokens = std::max(s.prefix_hit, 0);
    if (r.spec->max_tokens == 0) {  // prefill only: every choice ends here, with no token
      for (int c = 1; c < r.spec->n; ++c) bare_output(r, c, out).finish = Finish::Length;
      StepOutput& o = bare_output(r, s.index, out);
      if (plp) o.prompt = std::move(*plp);
      finish_seq(r, s, Finish::Length, out, &o);
      continue;
    }
    if (unmasked(i)) {  // aborted while its mask was awaited, or its grammar failed: no token
      end_unmasked(r, s, masks[i].wait, out);
      continue;
    }
    // Fork before the parent's token is appended: the parent may finish (and free its blocks) on it.
    if (s.index == 0 && !s.forked && r.spec->n > 1) fork_choices(r, s, logits.data() + size_t(row_of[i]) * V, out);
    append(r, s, samples[i], out, posted[i] != 0);
    if (plp) out.back().prompt = std::move(*plp);
  }
  if (grammar_posted_) {
    grammar_posted_ = false;
    grammar_bell::ring();
  }
  // Forks joined the running set on slots their choice 0 held (fair_share.h): still within the limit.
  ENGINE_ASSERT(int(sched_.running().size()) <= cfg_.max_num_seqs);
  ++steps_;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  publish_stats(ms, so.num_tokens, int(so.seqs.size()));
}

bool Engine::raw_logits_suffice(const Sequence& s) {
  const RequestSpec& r = *s.req;
  const bool fork_pending = s.index == 0 && !s.forked && r.n > 1;
  return r.logit_bias_ids.empty() && !r.uses_penalties() && r.logprobs < 0 && !fork_pending;
}

bool Engine::abort_pending(uint32_t id) {
  return stop_ || std::find(aborts_.begin(), aborts_.end(), id) != aborts_.end();
}

void Engine::await_masks(std::vector<MaskSlot>& slots) {
  std::vector<size_t> pending;  // slots whose row is not there yet
  for (size_t k = 0; k < slots.size(); ++k) {
    MaskSlot& m = slots[k];
    m.row = nullptr;
    m.wait = MaskWait::kNone;
    if (m.seq && m.seq->req->grammar) pending.push_back(k);
  }
  if (pending.empty()) return;
  // NOTE: the worker publishes a row with a release store to ready (Atomics.store); this acquire
  // load orders the row's words before their use. Spin a little (the rows are usually there: they
  // were computed during the forward pass), then sleep in short waits that an abort or stop cuts
  // short. The waits are short because a step's sampling waits on its last row: each wait's
  // overshoot is that step's loss (a worker cannot wake this thread: Atomics.notify reaches only JS
  // waiters). The time the step thread waited (a row was not there at once) goes to stats
  // (maskWaitMs), the copies of the rows that came meanwhile included.
  struct Waited {
    Clock::time_point t0;
    bool waited = false;
    uint64_t& sum;
    ~Waited() {
      if (waited) sum += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    }
  } waited{{}, false, mask_wait_ns_};
  for (int round = 0;; ++round) {
    size_t keep = 0;
    for (const size_t k : pending) {
      MaskSlot& m = slots[k];
      const RequestSpec& r = *m.seq->req;
      const int32_t v = __atomic_load_n(r.mask_ready(m.seq->index), __ATOMIC_ACQUIRE);
      if (v == int32_t(m.seq->num_output())) {
        m.row = r.mask_row(m.seq->index);
        if (m.copy_to) {  // mask_words: the vocabulary's (checked at submit), as the runner's rows
          std::memcpy(m.copy_to, m.row, sizeof(uint32_t) * size_t(r.mask_words));
          m.row = m.copy_to;
        }
        m.wait = MaskWait::kReady;
      } else if (v == RequestSpec::kMaskFailed) {
        m.wait = MaskWait::kFailed;
      } else {
        pending[keep++] = k;
      }
    }
    pending.resize(keep);
    if (pending.empty()) return;
    if (!waited.waited) {
      waited.waited = true;
      waited.t0 = Clock::now();
    }
    if (round < 256) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    const auto end_aborted = [&] {
      size_t left = 0;
      for (const size_t k : pending) {
        if (abort_pending(slots[k].seq->req->id)) slots[k].wait = MaskWait::kAborted;
        else pending[left++] = k;
      }
      pending.resize(left);
      return pending.empty();
    };
    if (end_aborted()) return;
    cv_.wait_for(lock, std::chrono::microseconds(20));
    if (end_aborted()) return;
  }
}

void Engine::end_unmasked(Request& r, Sequence& s, MaskWait w, std::vector<StepOutput>& out) {
  StepOutput& o = bare_output(r, s.index, out);
  if (w == MaskWait::kFailed) o.error = "structured output: the grammar matcher failed for this choice";
  finish_seq(r, s, w == MaskWait::kFailed ? Finish::Error : Finish::Abort, out, &o);
}

bool Engine::plain_greedy(const Sequence& s) {
  return s.req->temperature <= 0.0f && raw_logits_suffice(s) && !s.req->bans_stops(s.num_output()) && !s.req->grammar;
}

// NOTE: a min_tokens ban of more stop ids than the device list holds takes the host sampler. A
// grammar's mask goes to the device sampler with the row (DeviceSampling::masked).
bool Engine::device_samplable(const Sequence& s) {
  const RequestSpec& r = *s.req;
  return raw_logits_suffice(s) &&
         (!r.bans_stops(s.num_output()) || r.stop_token_ids.size() <= size_t(DeviceSampling::kMaxBans));
}

void Engine::loop() {
  for (;;) {
    std::vector<StepOutput> out;
    const bool running = drain_inbox(out);
    if (running && !requests_.empty()) step(out);
    // Requests whose choices are all done leave the table.
    std::vector<uint32_t> done;
    for (auto& [id, r] : requests_)
      if (r.unfinished == 0) done.push_back(id);
    if (!done.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint32_t id : done) live_ids_.erase(id);
    }
    for (uint32_t id : done) requests_.erase(id);
    // Stats first: a step callback that reads stats() must see the state its outputs describe.
    publish_stats(0, 0, 0);
    if (!out.empty()) sink_(std::move(out));
    if (!running) return;
  }
}

}  // namespace ee
