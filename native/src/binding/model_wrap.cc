#include "binding/model_wrap.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "binding/addon_data.h"
#include "binding/load_options.h"
#include "binding/membw.h"
#include "model/cuda_runner.h"
#include "model/model_runner.h"

namespace ee {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

Status check_config(const ModelConfig& c) {
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0)
    return Status::error("config.json: every dimension must be a positive integer");
  if (c.num_heads % c.num_kv_heads != 0)
    return Status::error("config.json: num_attention_heads must be a multiple of num_key_value_heads");
  if (c.head_dim % 2 != 0) return Status::error("config.json: head_dim must be even for RoPE");
  if (c.num_heads / c.num_kv_heads > 64) return Status::error("config.json: more than 64 query heads per KV head");
  if (int(c.inv_freq.size()) != c.head_dim / 2) return Status::error("internal: inv_freq must have head_dim/2 values");
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<LoadedModel>> load_model(const LoadOptions& opts) {
  if (Status st = check_config(opts.config); !st.is_ok()) return st;
  const cpu::Kernels* k = cpu::select_kernels(opts.isa);
  if (!k) return Status::error("this CPU lacks the instruction set '" + (opts.isa.empty() ? "avx2" : opts.isa) + "'");
  if (opts.block_size <= 0) return Status::error("blockSize must be positive");
  if (opts.quantization != "none" && opts.quantization != "int8")
    return Status::error("quantization must be none or int8 (got '" + opts.quantization + "')");
  const bool int8 = opts.quantization == "int8";
  if (opts.device == "cuda") {
    if (int8) return Status::error("quantization int8 runs on the CPU backend only (--device cpu)");
    if (opts.lm_head_precise >= 0 && (opts.lm_head_precise == 1) != opts.precise)
      return Status::error(
          "an LM head's planes apart from the layers' (--lm-head-planes) are for the CPU backend only");
    CudaOptions co;
    co.library = opts.cuda_library;
    co.num_blocks = opts.kv_blocks;
    co.block_size = opts.block_size;
    co.gpu_memory_utilization = opts.gpu_memory_utilization;
    co.max_model_len = opts.max_model_len;
    co.max_num_seqs = opts.max_num_seqs;
    co.max_batched_tokens = opts.max_batched_tokens;
    co.enforce_eager = opts.enforce_eager;
    co.capture_graphs = opts.capture_graphs;
    co.precise = opts.precise;
    co.kv_bf16 = opts.kv_cache_dtype == "bfloat16";
    auto r = make_cuda_runner(opts.config, opts.tensors, co);
    if (!r.is_ok()) return r.status();
    auto m = std::make_shared<LoadedModel>();
    m->pool = std::make_unique<ThreadPool>(opts.threads);
    m->host_kernels = k;
    m->gemm_peak = k->dot_peak;  // the host's: the GPU's own peak is not measured here
    m->runner = r.take();
    return m;
  }
  if (opts.device != "cpu") return Status::error("unknown device '" + opts.device + "' (cpu or cuda)");
  if (opts.kv_blocks <= 0) return Status::error("kvBlocks and blockSize must be positive");
  if (opts.kv_cache_dtype != "float32" && opts.kv_cache_dtype != "bfloat16")
    return Status::error("kvCacheDtype must be float32 or bfloat16 (got '" + opts.kv_cache_dtype + "')");
  // int8 GEMMs: the forced ISA's (AVX2 hosts take AVX-VNNI when they have it), else the best.
  const cpu::Int8Kernels* k8 = nullptr;
  if (int8) {
    k8 = opts.isa == "avx2" ? cpu::select_int8_kernels("avxvnni") : nullptr;
    if (!k8) k8 = cpu::select_int8_kernels(opts.isa);
    if (!k8) return Status::error("this CPU has no int8 kernels for the instruction set '" + opts.isa + "'");
  }
  Quantization quant;
  quant.int8 = int8;
  quant.lm_head_int8 = int8 && opts.lm_head_int8;
  auto w = ModelWeights::load(opts.config, opts.tensors, true, quant);
  if (!w.is_ok()) return w.status();
  auto kv = std::make_unique<KvCache>(opts.config, opts.kv_blocks, opts.block_size, opts.kv_cache_dtype == "bfloat16");
  if (!kv->ok()) return Status::error("cannot allocate the KV cache (" + std::to_string(kv->bytes()) + " bytes)");
  auto m = std::make_shared<LoadedModel>();
  m->pool = std::make_unique<ThreadPool>(opts.threads);
  m->host_kernels = k;
  m->gemm_peak = k8 ? k8->dot_peak : k->dot_peak;
  // auto (-1): an int8 LM head takes one activation plane (w8a8's usual form; its error stays far below
  // llama.cpp Q8_0's, bench/README "LM head planes"), any other follows the layers. Mirrored by the
  // TS loader's resolveLmHeadPrecise() (src/sidecar/engine/plan.ts).
  const bool head_precise = opts.lm_head_precise < 0 ? opts.precise && !quant.lm_head_int8 : opts.lm_head_precise == 1;
  m->runner = std::make_unique<ModelRunner>(opts.config, w.take(), std::move(kv), m->pool.get(), k, opts.precise, k8,
                                            head_precise);
  return m;
}

namespace {

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, LoadOptions opts)
      : Napi::AsyncWorker(env), opts_(std::move(opts)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    auto r = load_model(opts_);
    if (!r.is_ok()) return SetError(r.status().message());
    model_ = r.take();
  }
  void OnOK() override {
    auto* holder = new std::shared_ptr<LoadedModel>(model_);
    auto ext = Napi::External<std::shared_ptr<LoadedModel>>::New(
        Env(), holder, [](Napi::Env, std::shared_ptr<LoadedModel>* p) { delete p; });
    deferred_.Resolve(addon_data(Env()).model_ctor.New({ext}));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  LoadOptions opts_;
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<LoadedModel> model_;
};

// Owned copies of one slice's inputs (JS typed arrays may change while the worker runs).
struct SliceData {
  std::vector<int32_t> tokens, blocks;
  int start_pos = 0;
  SeqSlice::Logits logits = SeqSlice::kNone;
};

class ForwardWorker : public Napi::AsyncWorker {
 public:
  ForwardWorker(Napi::Env env, std::shared_ptr<LoadedModel> m, std::vector<SliceData> s)
      : Napi::AsyncWorker(env), m_(std::move(m)), s_(std::move(s)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    std::vector<SeqSlice> batch;
    for (auto& d : s_)
      batch.push_back(
          {d.tokens.data(), int(d.tokens.size()), d.start_pos, d.blocks.data(), int(d.blocks.size()), d.logits});
    std::lock_guard<std::mutex> lock(m_->mu);
    if (!m_->runner) return SetError("model is closed");
    Status st = m_->runner->forward(batch, logits_);
    if (!st.is_ok()) SetError(st.message());
  }
  void OnOK() override {
    auto arr = Napi::Float32Array::New(Env(), logits_.size());
    std::memcpy(arr.Data(), logits_.data(), logits_.size() * sizeof(float));
    deferred_.Resolve(arr);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  std::shared_ptr<LoadedModel> m_;
  std::vector<SliceData> s_;
  std::vector<float> logits_;
  Napi::Promise::Deferred deferred_;
};

// Greedy generation in one worker call (benchmarks, smoke tests): prefill in chunks, then decode.
class GreedyWorker : public Napi::AsyncWorker {
 public:
  GreedyWorker(Napi::Env env, std::shared_ptr<LoadedModel> m, SliceData d, int max_new, int chunk)
      : Napi::AsyncWorker(env), m_(std::move(m)), d_(std::move(d)), max_new_(max_new), chunk_(chunk),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    std::lock_guard<std::mutex> lock(m_->mu);
    if (!m_->runner) return SetError("model is closed");
    IModelRunner& r = *m_->runner;
    // A device argmax (CUDA) returns only the chosen id per step; the CPU takes the host argmax.
    const bool dev = r.has_device_argmax();
    std::vector<float> logits;
    std::vector<int32_t> am;
    const int V = r.config().vocab_size;
    auto step = [&](const SeqSlice& sl) { return dev ? r.forward_argmax({sl}, am) : r.forward({sl}, logits); };
    auto next = [&] {
      return dev ? am[0] : int32_t(std::max_element(logits.begin(), logits.begin() + V) - logits.begin());
    };
    auto t0 = Clock::now();
    const int n = int(d_.tokens.size());
    for (int s = 0; s < n; s += chunk_) {
      const int len = std::min(chunk_, n - s);
      SeqSlice sl{d_.tokens.data() + s,
                  len,
                  s,
                  d_.blocks.data(),
                  int(d_.blocks.size()),
                  s + len == n ? SeqSlice::kLast : SeqSlice::kNone};
      if (Status st = step(sl); !st.is_ok()) return SetError(st.message());
    }
    prefill_ms_ = ms_since(t0);
    auto t1 = Clock::now();
    for (int i = 0; i < max_new_; ++i) {
      out_.push_back(next());
      if (i + 1 == max_new_) break;
      SeqSlice sl{&out_.back(), 1, n + i, d_.blocks.data(), int(d_.blocks.size()), SeqSlice::kLast};
      if (Status st = step(sl); !st.is_ok()) return SetError(st.message());
    }
    decode_ms_ = ms_since(t1);
  }
  void OnOK() override {
    Napi::Object o = Napi::Object::New(Env());
    auto arr = Napi::Int32Array::New(Env(), out_.size());
    std::copy(out_.begin(), out_.end(), arr.Data());
    o.Set("tokens", arr);
    o.Set("prefillMs", prefill_ms_);
    o.Set("decodeMs", decode_ms_);
    deferred_.Resolve(o);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  std::shared_ptr<LoadedModel> m_;
  SliceData d_;
  int max_new_, chunk_;
  std::vector<int32_t> out_;
  double prefill_ms_ = 0, decode_ms_ = 0;
  Napi::Promise::Deferred deferred_;
};

std::vector<int32_t> int32s(const Napi::Value& v) {
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<int32_t>(a.Data(), a.Data() + a.ElementLength());
}

SliceData slice_from(const Napi::Object& o) {
  SliceData d;
  d.tokens = int32s(o.Get("tokens"));
  d.blocks = int32s(o.Get("blockTable"));
  d.start_pos = o.Has("startPos") ? o.Get("startPos").As<Napi::Number>().Int32Value() : 0;
  int lg = o.Has("logits") ? o.Get("logits").As<Napi::Number>().Int32Value() : 1;
  d.logits = lg == 2 ? SeqSlice::kAll : lg == 1 ? SeqSlice::kLast : SeqSlice::kNone;
  return d;
}

}  // namespace

Napi::Function NativeModel::Init(Napi::Env env) {
  Napi::Function f = DefineClass(
      env, "NativeModel",
      {InstanceMethod("info", &NativeModel::Info), InstanceMethod("forward", &NativeModel::Forward),
       InstanceMethod("generateGreedy", &NativeModel::GenerateGreedy),
       InstanceMethod("memoryBandwidth", &NativeModel::MemoryBandwidth),
       InstanceMethod("computePeak", &NativeModel::ComputePeak), InstanceMethod("close", &NativeModel::Close)});
  addon_data(env).model_ctor = Napi::Persistent(f);
  return f;
}

NativeModel::NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
  if (info.Length() != 1 || !info[0].IsExternal())
    throw Napi::TypeError::New(info.Env(), "NativeModel is created by loadModel()");
  model_ = *info[0].As<Napi::External<std::shared_ptr<LoadedModel>>>().Data();
}

Napi::Value NativeModel::Load(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(info.Env(), "loadModel(options)");
  auto* w = new LoadWorker(info.Env(), parse_load_options(info[0].As<Napi::Object>()));
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Object profile_js(Napi::Env env, const RunnerProfile& pr) {
  Napi::Object prof = Napi::Object::New(env);
  prof.Set("gemmMs", pr.gemm_ms);
  prof.Set("gemmQkvMs", pr.gemm_qkv_ms);
  prof.Set("gemmOMs", pr.gemm_o_ms);
  prof.Set("gemmGateUpMs", pr.gemm_gate_up_ms);
  prof.Set("gemmDownMs", pr.gemm_down_ms);
  prof.Set("attentionMs", pr.attention_ms);
  prof.Set("otherMs", pr.other_ms);
  prof.Set("lmHeadMs", pr.lm_head_ms);
  prof.Set("embedMs", pr.embed_ms);
  prof.Set("ropeKvMs", pr.rope_kv_ms);
  prof.Set("residualMs", pr.residual_ms);
  prof.Set("prepMs", pr.prep_ms);
  prof.Set("gemmBusyMs", pr.gemm_busy_ms);
  prof.Set("attentionBusyMs", pr.attention_busy_ms);
  prof.Set("threads", double(pr.threads));
  prof.Set("steps", double(pr.steps));
  prof.Set("tokens", double(pr.tokens));
  return prof;
}

Napi::Value NativeModel::Info(const Napi::CallbackInfo& info) {
  if (!model_) throw Napi::Error::New(info.Env(), "model is closed");
  IModelRunner& r = *model_->runner;
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("isa", r.backend());
  o.Set("device", std::string(r.backend()) == "cuda" ? "cuda" : "cpu");
  o.Set("threads", model_->pool->size());
  o.Set("kvBlocks", r.num_blocks());
  o.Set("blockSize", r.block_size());
  o.Set("kvBytes", double(r.kv_bytes()));
  o.Set("weightBytes", double(r.weight_bytes()));
  if (auto* cpu_runner = dynamic_cast<ModelRunner*>(&r)) {
    // The GEMM kernels in use: the layers' (int8 or bf16) and the LM head's.
    const cpu::Int8Kernels* k8 = cpu_runner->int8_kernels();
    const Quantization& q = cpu_runner->weights().quant;
    o.Set("quantization", q.int8 ? "int8" : "none");
    o.Set("gemm", q.int8 ? k8->isa : r.backend());
    o.Set("lmHeadGemm", q.lm_head_int8 ? k8->isa : r.backend());
    o.Set("planes", cpu_runner->precise() ? 2 : 1);
    o.Set("lmHeadPlanes", cpu_runner->lm_head_precise() ? 2 : 1);
    o.Set("profile", profile_js(info.Env(), cpu_runner->profile()));
  }
  uint64_t graph_steps = 0, eager_steps = 0, captures = 0, used = 0;
  std::string name;
  if (cuda_graph_stats(r, &graph_steps, &eager_steps, &captures, &name, &used)) {
    Napi::Object c = Napi::Object::New(info.Env());
    c.Set("deviceName", name);
    c.Set("graphSteps", double(graph_steps));
    c.Set("eagerSteps", double(eager_steps));
    c.Set("graphCaptures", double(captures));
    c.Set("gpuBytesUsed", double(used));
    o.Set("cuda", c);
  }
  return o;
}

Napi::Value NativeModel::Forward(const Napi::CallbackInfo& info) {
  if (!model_) throw Napi::Error::New(info.Env(), "model is closed");
  Napi::Array arr = info[0].As<Napi::Array>();
  std::vector<SliceData> slices;
  for (uint32_t i = 0; i < arr.Length(); ++i) slices.push_back(slice_from(arr.Get(i).As<Napi::Object>()));
  auto* w = new ForwardWorker(info.Env(), model_, std::move(slices));
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value NativeModel::GenerateGreedy(const Napi::CallbackInfo& info) {
  if (!model_) throw Napi::Error::New(info.Env(), "model is closed");
  SliceData d = slice_from(info[0].As<Napi::Object>());
  int max_new = info[1].As<Napi::Number>().Int32Value();
  int chunk = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 1 << 30;
  if (max_new < 1 || chunk < 1 || d.tokens.empty())
    throw Napi::RangeError::New(info.Env(), "bad generateGreedy arguments");
  auto* w = new GreedyWorker(info.Env(), model_, std::move(d), max_new, chunk);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value NativeModel::MemoryBandwidth(const Napi::CallbackInfo& info) {
  if (!model_) throw Napi::Error::New(info.Env(), "model is closed");
  size_t bytes = size_t(info[0].As<Napi::Number>().Int64Value());
  std::lock_guard<std::mutex> lock(model_->mu);
  return Napi::Number::New(info.Env(), measure_read_bandwidth(*model_->pool, bytes));
}

Napi::Value NativeModel::ComputePeak(const Napi::CallbackInfo& info) {
  if (!model_) throw Napi::Error::New(info.Env(), "model is closed");
  std::lock_guard<std::mutex> lock(model_->mu);
  return Napi::Number::New(info.Env(), measure_compute_peak(*model_->pool, model_->gemm_peak));
}

Napi::Value NativeModel::Close(const Napi::CallbackInfo& info) {
  model_.reset();  // in-flight workers hold their own reference
  return info.Env().Undefined();
}

}  // namespace ee
