// Module entry: loadModel, formula-weight generation, CPU capability report, GEMM self-check.
#include <napi.h>

#include <thread>

#include "binding/engine_wrap.h"
#include "binding/gemm_check.h"
#include "binding/model_wrap.h"
#include "cpu/kernels.h"
#include "cpu/qgemm.h"
#include "engine/grammar_bell.h"
#include "formula/formula.h"
#include "model/cuda_runner.h"

namespace ee {
namespace {

// formulaTensor(name, numel, salt) -> Promise<Buffer> of numel bf16 values (little-endian).
class FormulaWorker : public Napi::AsyncWorker {
 public:
  FormulaWorker(Napi::Env env, std::string name, uint64_t numel, uint32_t salt)
      : Napi::AsyncWorker(env), name_(std::move(name)), numel_(numel), salt_(salt),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    data_.resize(numel_);
    const uint64_t half = numel_ / 2;
    std::thread t([&] { formula_fill(name_, salt_, 0, half, data_.data()); });
    formula_fill(name_, salt_, half, numel_ - half, data_.data() + half);
    t.join();
  }
  void OnOK() override {
    deferred_.Resolve(
        Napi::Buffer<uint8_t>::Copy(Env(), reinterpret_cast<const uint8_t*>(data_.data()), data_.size() * 2));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  std::string name_;
  uint64_t numel_;
  uint32_t salt_;
  std::vector<uint16_t> data_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value FormulaTensor(const Napi::CallbackInfo& info) {
  std::string name = info[0].As<Napi::String>().Utf8Value();
  int64_t numel = info[1].As<Napi::Number>().Int64Value();
  uint32_t salt = info.Length() > 2 ? info[2].As<Napi::Number>().Uint32Value() : 0;
  if (numel < 0) throw Napi::RangeError::New(info.Env(), "numel must be >= 0");
  auto* w = new FormulaWorker(info.Env(), std::move(name), uint64_t(numel), salt);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value CpuInfo(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("avx512bf16", cpu::select_kernels("avx512") != nullptr);
  o.Set("avx2", cpu::select_kernels("avx2") != nullptr);
  o.Set("amx", cpu::amx_usable());
  o.Set("amxBf16SmallRows", cpu::amx_bf16_small_rows());
  o.Set("amxBf16TileOrder", cpu::amx_bf16_tile_order());
  o.Set("avx512vnni", cpu::select_int8_kernels("avx512") != nullptr);
  o.Set("avxvnni", cpu::select_int8_kernels("avxvnni") != nullptr);
  const cpu::Kernels* best = cpu::select_kernels("");
  o.Set("best", best ? best->isa : "none");
  const cpu::Int8Kernels* best8 = cpu::select_int8_kernels("");
  o.Set("bestInt8", best8 ? best8->isa : "none");
  o.Set("cores", double(std::thread::hardware_concurrency()));
  return o;
}

// cudaInfo(libraryPath) -> { available, devices, reason }: whether the CUDA backend can run here.
Napi::Value CudaInfo(const Napi::CallbackInfo& info) {
  const std::string lib = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  CudaProbe p = probe_cuda(lib);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("available", p.available);
  o.Set("devices", p.devices);
  o.Set("reason", p.reason);
  return o;
}

// The grammar bell (engine/grammar_bell.h), for the sidecar's grammar workers and their pool:
// grammarBell() -> the count; grammarWait(seen, timeoutMs) -> whether it moved past seen (blocks this
// JS thread: a grammar worker's only); grammarRing(); grammarRingAge() -> ms since the last ring.
Napi::Value GrammarBell(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(grammar_bell::value()));
}
Napi::Value GrammarWait(const Napi::CallbackInfo& info) {
  const uint64_t seen = uint64_t(info[0].As<Napi::Number>().DoubleValue());
  const double timeout_ms = info[1].As<Napi::Number>().DoubleValue();
  return Napi::Boolean::New(info.Env(), grammar_bell::wait(seen, timeout_ms));
}
Napi::Value GrammarRing(const Napi::CallbackInfo& info) {
  grammar_bell::ring();
  return info.Env().Undefined();
}
Napi::Value GrammarRingAge(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), grammar_bell::ms_since_ring());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeModel", NativeModel::Init(env));
  exports.Set("loadModel", Napi::Function::New(env, NativeModel::Load));
  exports.Set("NativeEngine", InitNativeEngine(env));
  exports.Set("createEngine", Napi::Function::New(env, CreateEngine));
  exports.Set("BlockPool", InitBlockPool(env));
  exports.Set("formulaTensor", Napi::Function::New(env, FormulaTensor));
  exports.Set("cpuInfo", Napi::Function::New(env, CpuInfo));
  exports.Set("cudaInfo", Napi::Function::New(env, CudaInfo));
  exports.Set("qgemmCheck", Napi::Function::New(env, QgemmCheck));
  exports.Set("gemmCheck", Napi::Function::New(env, GemmCheck));
  exports.Set("grammarBell", Napi::Function::New(env, GrammarBell));
  exports.Set("grammarWait", Napi::Function::New(env, GrammarWait));
  exports.Set("grammarRing", Napi::Function::New(env, GrammarRing));
  exports.Set("grammarRingAge", Napi::Function::New(env, GrammarRingAge));
  exports.Set("abiVersion", Napi::Number::New(env, 1));
  return exports;
}

}  // namespace
}  // namespace ee

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return ee::Init(env, exports); }

NODE_API_MODULE(ernie_native, InitModule)
