// NativeModel: the JS handle of a loaded model (weights + KV cache + runner). All model work runs
// on libuv worker threads (Napi::AsyncWorker), never on the Node event loop; one call at a time
// per model (the compute thread pool serves one caller), queued behind a mutex.
#pragma once
#include <napi.h>

#include <memory>
#include <mutex>

#include "common/thread_pool.h"
#include "cpu/kernels.h"
#include "model/runner.h"

namespace ee {

struct LoadedModel {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<IModelRunner> runner;
  const cpu::Kernels* host_kernels = nullptr;  // the sampler's (and the CPU runner's) kernels
  // The widest multiply-add of the kernels the layers' GEMMs run (computePeak): the int8 kernels'
  // (vpdpbusd, 128 integer ops an instruction on AVX512-VNNI) under --quantization int8, else
  // host_kernels' (vdpbf16ps, 64 FLOP; AMX-BF16 where chosen).
  double (*gemm_peak)(long iters) = nullptr;
  std::mutex mu;  // serialises forward calls
};

// Loads weights, KV cache, thread pool and runner (call off the event loop).
struct LoadOptions;
Result<std::shared_ptr<LoadedModel>> load_model(const LoadOptions& opts);

// A runner's phase profile as the JS CpuProfile (src/sidecar/native.ts): model.info().profile and
// engine.stats().profile.
Napi::Object profile_js(Napi::Env env, const RunnerProfile& p);

class NativeModel : public Napi::ObjectWrap<NativeModel> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::Value Load(const Napi::CallbackInfo& info);  // loadModel(opts) -> Promise<NativeModel>
  explicit NativeModel(const Napi::CallbackInfo& info);

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Forward(const Napi::CallbackInfo& info);
  Napi::Value GenerateGreedy(const Napi::CallbackInfo& info);
  Napi::Value MemoryBandwidth(const Napi::CallbackInfo& info);
  Napi::Value ComputePeak(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  std::shared_ptr<LoadedModel> model_;
};

}  // namespace ee
