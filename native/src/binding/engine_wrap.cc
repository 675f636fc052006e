#include "binding/engine_wrap.h"

#include <algorithm>
#include <memory>
#include <string>

#include "binding/addon_data.h"
#include "binding/load_options.h"
#include "binding/model_wrap.h"
#include "engine/engine.h"

namespace ee {

namespace {

// Owns the thread pool and the engine (engine first out: it stops its thread before the pool goes).
struct EngineHolder {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Engine> engine;
  Napi::ThreadSafeFunction tsfn;
};

template <typename T, typename A>
std::vector<T> vec(const Napi::Value& v) {
  if (!v.IsTypedArray()) return {};
  A a = v.As<A>();
  return std::vector<T>(a.Data(), a.Data() + a.ElementLength());
}

EngineConfig engine_config(const Napi::Object& o) {
  EngineConfig c;
  // The values with no native default (engine.h): a missing one is a bug in the TS caller.
  auto required = [&](const char* k) {
    int v = get_int(o, k, 0);
    if (v < 1)
      throw Napi::TypeError::New(o.Env(),
                                 std::string("createEngine: engineOptions.") + k + " must be a positive integer");
    return v;
  };
  c.max_num_seqs = get_int(o, "maxNumSeqs", 0);  // 0: the load options' (CreateEngine)
  c.max_num_batched_tokens = get_int(o, "maxNumBatchedTokens", c.max_num_batched_tokens);
  c.max_model_len = required("maxModelLen");
  c.max_n = required("maxN");
  c.max_logprobs = required("maxLogprobs");
  c.prefill_batch = std::max(1, get_int(o, "prefillBatch", c.prefill_batch));
  c.prefill_max_wait = std::max(0, get_int(o, "prefillMaxWait", c.prefill_max_wait));
  if (o.Get("enablePrefixCaching").IsBoolean())
    c.prefix_caching = o.Get("enablePrefixCaching").As<Napi::Boolean>().Value();
  c.seed = uint64_t(get_int(o, "seed", 0));
  return c;
}

Napi::Object to_js(Napi::Env env, const StepOutput& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", double(s.id));
  o.Set("index", s.index);
  auto toks = Napi::Int32Array::New(env, s.tokens.size());
  std::copy(s.tokens.begin(), s.tokens.end(), toks.Data());
  o.Set("tokens", toks);
  if (!s.logprobs.empty()) {
    auto lp = Napi::Float32Array::New(env, s.logprobs.size());
    std::copy(s.logprobs.begin(), s.logprobs.end(), lp.Data());
    o.Set("logprobs", lp);
    auto ti = Napi::Int32Array::New(env, s.top_ids.size());
    std::copy(s.top_ids.begin(), s.top_ids.end(), ti.Data());
    o.Set("topIds", ti);
    auto tl = Napi::Float32Array::New(env, s.top_logprobs.size());
    std::copy(s.top_logprobs.begin(), s.top_logprobs.end(), tl.Data());
    o.Set("topLogprobs", tl);
  }
  if (s.prompt.start > 0) {  // prompt logprobs computed this step (choice 0)
    Napi::Object p = Napi::Object::New(env);
    p.Set("start", s.prompt.start);
    auto f32 = [&](const std::vector<float>& v) {
      auto a = Napi::Float32Array::New(env, v.size());
      std::copy(v.begin(), v.end(), a.Data());
      return a;
    };
    auto i32 = [&](const std::vector<int32_t>& v) {
      auto a = Napi::Int32Array::New(env, v.size());
      std::copy(v.begin(), v.end(), a.Data());
      return a;
    };
    p.Set("logprobs", f32(s.prompt.logprobs));
    p.Set("ranks", i32(s.prompt.ranks));
    p.Set("topIds", i32(s.prompt.top_ids));
    p.Set("topLogprobs", f32(s.prompt.top_logprobs));
    o.Set("prompt", p);
  }
  if (s.timing.set) {
    Napi::Object t = Napi::Object::New(env);
    t.Set("queue", s.timing.queue_s);
    t.Set("prefill", s.timing.prefill_s);
    t.Set("decode", s.timing.decode_s);
    t.Set("inference", s.timing.inference_s);
    t.Set("preemptions", s.timing.preemptions);
    o.Set("timing", t);
  }
  o.Set("finish", int(s.finish));
  o.Set("promptTokens", s.prompt_tokens);
  o.Set("cachedTokens", s.cached_tokens);
  if (!s.error.empty()) o.Set("error", s.error);
  return o;
}

class EngineWrap : public Napi::ObjectWrap<EngineWrap> {
 public:
  explicit EngineWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineWrap>(info) {
    h_ = *info[0].As<Napi::External<std::shared_ptr<EngineHolder>>>().Data();
  }

  Napi::Value Submit(const Napi::CallbackInfo& info) {
    if (!h_) throw Napi::Error::New(info.Env(), "engine is closed");
    Napi::Object o = info[0].As<Napi::Object>();
    RequestSpec r;
    r.id = o.Get("id").As<Napi::Number>().Uint32Value();
    r.prompt = vec<int32_t, Napi::Int32Array>(o.Get("prompt"));
    r.max_tokens = get_int(o, "maxTokens", 16);
    r.n = get_int(o, "n", 1);
    r.temperature = get_float(o, "temperature", 1.0f);
    r.top_p = get_float(o, "topP", 1.0f);
    r.top_k = get_int(o, "topK", 0);
    r.min_p = get_float(o, "minP", 0.0f);
    r.repetition_penalty = get_float(o, "repetitionPenalty", 1.0f);
    r.frequency_penalty = get_float(o, "frequencyPenalty", 0.0f);
    r.presence_penalty = get_float(o, "presencePenalty", 0.0f);
    Napi::Value seed = o.Get("seed");
    if (seed.IsNumber()) {
      r.has_seed = true;
      r.seed = uint64_t(seed.As<Napi::Number>().Int64Value());
    }
    r.logit_bias_ids = vec<int32_t, Napi::Int32Array>(o.Get("logitBiasIds"));
    r.logit_bias_values = vec<float, Napi::Float32Array>(o.Get("logitBiasValues"));
    if (r.logit_bias_ids.size() != r.logit_bias_values.size())
      return Napi::String::New(info.Env(), "logit bias ids and values differ in length");
    r.stop_token_ids = vec<int32_t, Napi::Int32Array>(o.Get("stopTokenIds"));
    r.min_tokens = get_int(o, "minTokens", 0);
    r.logprobs = get_int(o, "logprobs", -1);
    r.prompt_logprobs = get_int(o, "promptLogprobs", -1);
    // The grammar masks' shared buffer (an Int32Array over a SharedArrayBuffer; request.h has its
    // layout). The engine keeps only the pointer: the sidecar holds the buffer until the last output.
    Napi::Value g = o.Get("grammar");
    if (g.IsTypedArray()) {
      if (g.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
        return Napi::String::New(info.Env(), "grammar must be an Int32Array");
      auto a = g.As<Napi::Int32Array>();
      r.mask_words = get_int(o, "maskWords", 0);
      if (r.mask_words < 1 || a.ElementLength() != size_t(r.n) * size_t(RequestSpec::kGrammarHeader + r.mask_words))
        return Napi::String::New(info.Env(),
                                 "grammar must hold n ready, n posted and n token words and n rows of maskWords words");
      r.grammar = a.Data();
    }
    std::string err = h_->engine->submit(std::move(r));
    return err.empty() ? info.Env().Null() : Napi::String::New(info.Env(), err);
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (h_) h_->engine->abort(info[0].As<Napi::Number>().Uint32Value());
    return info.Env().Undefined();
  }

  Napi::Value Pause(const Napi::CallbackInfo& info) {
    if (h_) h_->engine->pause(info[0].As<Napi::Number>().Uint32Value(), info[1].ToBoolean().Value());
    return info.Env().Undefined();
  }

  Napi::Value Waiting(const Napi::CallbackInfo& info) {
    if (!h_) throw Napi::Error::New(info.Env(), "engine is closed");
    return Napi::Number::New(info.Env(), h_->engine->waiting());
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    if (!h_) throw Napi::Error::New(info.Env(), "engine is closed");
    EngineStats s = h_->engine->stats();
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("running", s.running);
    o.Set("waiting", s.waiting);
    o.Set("maxRunning", s.max_running);
    o.Set("maxWaiting", s.max_waiting);
    o.Set("fairPreemptions", double(s.fair_preemptions));
    o.Set("kvBlocksTotal", s.kv_blocks_total);
    o.Set("kvBlocksFree", s.kv_blocks_free);
    o.Set("kvUsage", s.kv_blocks_total ? 1.0 - double(s.kv_blocks_free) / s.kv_blocks_total : 0.0);
    o.Set("preemptions", double(s.preemptions));
    o.Set("prefixCacheQueries", double(s.prefix_queries));
    o.Set("prefixCacheHits", double(s.prefix_hits));
    o.Set("promptTokens", double(s.prompt_tokens));
    o.Set("generationTokens", double(s.generation_tokens));
    o.Set("steps", double(s.steps));
    o.Set("stepTimeMs", s.step_ms);
    o.Set("maskWaitMs", s.mask_wait_ms);
    o.Set("maskSteps", double(s.mask_steps));
    o.Set("maskWaitFromRingMs", s.mask_wait_from_ring_ms);
    o.Set("maskDoneFromRingMs", s.mask_done_from_ring_ms);
    o.Set("lastStepTokens", s.last_step_tokens);
    o.Set("lastStepSeqs", s.last_step_seqs);
    // vllm:iteration_tokens_total: bounds and cumulative counts (Prometheus buckets), sum.
    auto bounds = Napi::Array::New(info.Env(), kIterationTokenBounds.size());
    auto counts = Napi::Array::New(info.Env(), kIterationTokenBounds.size());
    uint64_t acc = 0;
    for (size_t b = 0; b < kIterationTokenBounds.size(); ++b) {
      acc += s.iteration_counts[b];
      bounds.Set(uint32_t(b), kIterationTokenBounds[b]);
      counts.Set(uint32_t(b), double(acc));
    }
    Napi::Object it = Napi::Object::New(info.Env());
    it.Set("bounds", bounds);
    it.Set("counts", counts);
    it.Set("count", double(acc + s.iteration_counts.back()));
    it.Set("sum", double(s.iteration_tokens_sum));
    o.Set("iterationTokens", it);
    if (s.has_profile) o.Set("profile", profile_js(info.Env(), s.profile));
    return o;
  }

  // close() -> Promise: stops the step thread off the event loop (a step may be in flight), then
  // frees the engine, its model and its pool there too, so that the memory (GPU memory with the
  // CUDA backend) is free when the promise resolves. Before, the model lived until the garbage
  // collector dropped the last handle: a cudaFree at a random moment on the JS thread, which
  // invalidated a CUDA graph capture running on another engine's step thread (native/cuda/README.md,
  // "Graph captures and other threads").
  Napi::Value Close(const Napi::CallbackInfo& info) {
    auto d = Napi::Promise::Deferred::New(info.Env());
    if (!h_) {
      d.Resolve(info.Env().Undefined());
      return d.Promise();
    }
    struct Closer : Napi::AsyncWorker {
      Closer(Napi::Env env, std::shared_ptr<EngineHolder> h, Napi::Promise::Deferred d)
          : Napi::AsyncWorker(env), h(std::move(h)), d(d) {}
      void Execute() override {
        h->engine->stop();
        h->engine.reset();  // engine first: it stops its thread before the pool goes
        h->pool.reset();
      }
      void OnOK() override {
        h->tsfn.Release();
        d.Resolve(Env().Undefined());
      }
      std::shared_ptr<EngineHolder> h;
      Napi::Promise::Deferred d;
    };
    auto* w = new Closer(info.Env(), h_, d);
    h_.reset();
    w->Queue();
    return d.Promise();
  }

 private:
  std::shared_ptr<EngineHolder> h_;
};

class CreateWorker : public Napi::AsyncWorker {
 public:
  CreateWorker(Napi::Env env, LoadOptions lo, EngineConfig ec, Napi::Function on_step)
      : Napi::AsyncWorker(env), lo_(std::move(lo)), ec_(ec), d_(Napi::Promise::Deferred::New(env)) {
    tsfn_ = Napi::ThreadSafeFunction::New(env, on_step, "ernie-engine-steps", 0, 1);
    tsfn_.Unref(env);  // an idle engine must not keep the process alive
  }
  Napi::Promise promise() { return d_.Promise(); }
  void Execute() override {
    auto r = load_model(lo_);
    if (!r.is_ok()) return SetError(r.status().message());
    std::shared_ptr<LoadedModel> m = r.take();
    holder_ = std::make_shared<EngineHolder>();
    holder_->pool = std::move(m->pool);
    holder_->tsfn = tsfn_;
    Napi::ThreadSafeFunction tsfn = tsfn_;
    auto sink = [tsfn](std::vector<StepOutput>&& out) mutable {
      auto* data = new std::vector<StepOutput>(std::move(out));
      napi_status st = tsfn.NonBlockingCall(data, [](Napi::Env env, Napi::Function fn, std::vector<StepOutput>* d) {
        Napi::Array arr = Napi::Array::New(env, d->size());
        for (size_t i = 0; i < d->size(); ++i) arr.Set(uint32_t(i), to_js(env, (*d)[i]));
        delete d;
        fn.Call({arr});
      });
      if (st != napi_ok) delete data;  // the JS side is gone (closing)
    };
    holder_->engine = std::make_unique<Engine>(std::move(m->runner), m->host_kernels, holder_->pool.get(), ec_, sink);
  }
  void OnOK() override {
    auto* hp = new std::shared_ptr<EngineHolder>(holder_);
    auto ext = Napi::External<std::shared_ptr<EngineHolder>>::New(
        Env(), hp, [](Napi::Env, std::shared_ptr<EngineHolder>* p) { delete p; });
    d_.Resolve(addon_data(Env()).engine_ctor.New({ext}));
  }
  void OnError(const Napi::Error& e) override {
    tsfn_.Release();
    d_.Reject(e.Value());
  }

 private:
  LoadOptions lo_;
  EngineConfig ec_;
  Napi::ThreadSafeFunction tsfn_;
  std::shared_ptr<EngineHolder> holder_;
  Napi::Promise::Deferred d_;
};

// BlockPool for unit tests (exact ids, ref counts, eviction order). Hashes are BigInts.
class BlockPoolWrap : public Napi::ObjectWrap<BlockPoolWrap> {
 public:
  explicit BlockPoolWrap(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<BlockPoolWrap>(info), p_(info[0].As<Napi::Number>().Int32Value()) {}
  Napi::Value Allocate(const Napi::CallbackInfo& i) { return Napi::Number::New(i.Env(), p_.allocate()); }
  Napi::Value Incref(const Napi::CallbackInfo& i) {
    p_.incref(block(i));
    return i.Env().Undefined();
  }
  Napi::Value Decref(const Napi::CallbackInfo& i) {
    p_.decref(block(i));
    return i.Env().Undefined();
  }
  Napi::Value Acquire(const Napi::CallbackInfo& i) {
    p_.acquire(block(i));
    return i.Env().Undefined();
  }
  Napi::Value RefCount(const Napi::CallbackInfo& i) { return Napi::Number::New(i.Env(), p_.ref_count(block(i))); }
  Napi::Value NumFree(const Napi::CallbackInfo& i) { return Napi::Number::New(i.Env(), p_.num_free()); }
  Napi::Value Cached(const Napi::CallbackInfo& i) { return Napi::Number::New(i.Env(), p_.cached(hash(i[0]))); }
  Napi::Value SetHash(const Napi::CallbackInfo& i) {
    p_.set_hash(block(i), hash(i[1]));
    return i.Env().Undefined();
  }
  Napi::Value FreeOrder(const Napi::CallbackInfo& i) {
    auto v = p_.free_order();
    Napi::Array a = Napi::Array::New(i.Env(), v.size());
    for (size_t k = 0; k < v.size(); ++k) a.Set(uint32_t(k), v[k]);
    return a;
  }

 private:
  // Block ids are checked here: this class is driven by tests, and a bad id must not abort.
  int block(const Napi::CallbackInfo& i) {
    int b = i[0].As<Napi::Number>().Int32Value();
    if (b < 0 || b >= p_.num_blocks()) throw Napi::RangeError::New(i.Env(), "block id out of range");
    return b;
  }
  static uint64_t hash(const Napi::Value& v) {
    bool lossless;
    return v.As<Napi::BigInt>().Uint64Value(&lossless);
  }
  BlockPool p_;
};

}  // namespace

Napi::Function InitNativeEngine(Napi::Env env) {
  Napi::Function f = EngineWrap::DefineClass(
      env, "NativeEngine",
      {EngineWrap::InstanceMethod("submit", &EngineWrap::Submit),
       EngineWrap::InstanceMethod("abort", &EngineWrap::Abort), EngineWrap::InstanceMethod("pause", &EngineWrap::Pause),
       EngineWrap::InstanceMethod("stats", &EngineWrap::Stats),
       EngineWrap::InstanceMethod("waitingCount", &EngineWrap::Waiting),
       EngineWrap::InstanceMethod("close", &EngineWrap::Close)});
  addon_data(env).engine_ctor = Napi::Persistent(f);
  return f;
}

Napi::Value CreateEngine(const Napi::CallbackInfo& info) {
  if (info.Length() < 3 || !info[0].IsObject() || !info[1].IsObject() || !info[2].IsFunction())
    throw Napi::TypeError::New(info.Env(), "createEngine(loadOptions, engineOptions, onStep)");
  LoadOptions lo = parse_load_options(info[0].As<Napi::Object>());
  EngineConfig ec = engine_config(info[1].As<Napi::Object>());
  // The runner's step buffers (and CUDA graphs) are sized by the load options' maxNumSeqs: the
  // scheduler may never put more sequences in a step than that (fair_share.h, Scheduler::schedule).
  if (ec.max_num_seqs == 0) ec.max_num_seqs = lo.max_num_seqs;
  if (ec.max_num_seqs > lo.max_num_seqs)
    throw Napi::TypeError::New(info.Env(), "createEngine: engineOptions.maxNumSeqs (" +
                                               std::to_string(ec.max_num_seqs) + ") exceeds loadOptions.maxNumSeqs (" +
                                               std::to_string(lo.max_num_seqs) + "), which sizes the step buffers");
  auto* w = new CreateWorker(info.Env(), std::move(lo), ec, info[2].As<Napi::Function>());
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Function InitBlockPool(Napi::Env env) {
  using W = BlockPoolWrap;
  return W::DefineClass(env, "BlockPool",
                        {W::InstanceMethod("allocate", &W::Allocate), W::InstanceMethod("incref", &W::Incref),
                         W::InstanceMethod("decref", &W::Decref), W::InstanceMethod("acquire", &W::Acquire),
                         W::InstanceMethod("refCount", &W::RefCount), W::InstanceMethod("numFree", &W::NumFree),
                         W::InstanceMethod("cached", &W::Cached), W::InstanceMethod("setHash", &W::SetHash),
                         W::InstanceMethod("freeOrder", &W::FreeOrder)});
}

}  // namespace ee
