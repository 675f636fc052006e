// NativeEngine: the JS handle of the batching engine. createEngine(loadOptions, engineOptions,
// onStep) loads the model off the event loop and starts the step thread; onStep receives each
// step's outputs as one array (a thread-safe function call per step, never per token).
#pragma once
#include <napi.h>

namespace ee {

Napi::Function InitNativeEngine(Napi::Env env);
Napi::Value CreateEngine(const Napi::CallbackInfo& info);
Napi::Function InitBlockPool(Napi::Env env);

}  // namespace ee
