// Per-environment state of the addon: the classes' constructors. The addon is loaded by the main
// thread and by the sidecar's grammar workers (for the grammar bell), each its own environment, so
// a constructor reference must belong to the environment that made it (a process-wide one was
// overwritten by a worker's load and then used from the main thread: V8 aborts).
#pragma once
#include <napi.h>

namespace ee {

struct AddonData {
  Napi::FunctionReference model_ctor;
  Napi::FunctionReference engine_ctor;
};

inline AddonData& addon_data(Napi::Env env) {
  AddonData* d = env.GetInstanceData<AddonData>();
  if (!d) {
    d = new AddonData();
    env.SetInstanceData(d);  // deleted with the environment
  }
  return *d;
}

}  // namespace ee
