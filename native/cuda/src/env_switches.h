// Every environment variable the CUDA model runner reads, in one table: its name, its meaning, its
// default. Read once per model, when it is created (ee_cuda_create), so a test may set one between
// two models of one process. Documented in native/cuda/README.md ("Environment variables").
#pragma once
#include <cstdlib>
#include <string>

namespace eec {

struct EnvSwitches {
  // ERNIE_CUDA_BF16_OUT=0: with one activation plane, GEMMs write fp32 instead of bf16 (default 1).
  bool bf16_out = true;
  // ERNIE_CUDA_DECODE_WALK=0: decode attention always uses the partitioned kernels, never the
  // whole-row kernel (default 1: whole rows from 128 decode rows, bf16 cache and one plane only).
  bool decode_walk = true;
  // ERNIE_CUDA_GEMV_MAX_M=N: GEMMs of at most N rows (at most 16) go to our GEMV, the rest to
  // cuBLAS (default 4). ERNIE_CUDA_NO_GEMV set (any value): 0, i.e. cuBLAS only.
  int gemv_max_m = 4;
  // ERNIE_CUDA_FAIL_CAPTURES=N (tests only): the next N graph captures while serving fail on
  // purpose, exercising the eager fallback (default 0).
  int fail_captures = 0;
  // ERNIE_CUDA_PROFILE=1 | graph | step: the profiler's mode (profiler.h); unset: off. Set but empty
  // is mode 1, as any value other than graph and step.
  bool profile = false;
  std::string profile_mode;
};

namespace env_detail {
inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
}  // namespace env_detail

inline EnvSwitches read_env_switches() {
  using env_detail::env_int;
  EnvSwitches e;
  e.bf16_out = env_int("ERNIE_CUDA_BF16_OUT", 1) == 1;
  e.decode_walk = env_int("ERNIE_CUDA_DECODE_WALK", 1) != 0;
  e.gemv_max_m = std::getenv("ERNIE_CUDA_NO_GEMV") ? 0 : env_int("ERNIE_CUDA_GEMV_MAX_M", 4);
  e.fail_captures = env_int("ERNIE_CUDA_FAIL_CAPTURES", 0);
  const char* profile = std::getenv("ERNIE_CUDA_PROFILE");
  e.profile = profile != nullptr;
  e.profile_mode = profile ? profile : "";
  return e;
}

}  // namespace eec
