// gemmCheck: the CPU GEMM kernels against a double-precision reference on random data, for tests
// (tails of N and K that no checkpoint shape reaches, task splits, batch composition).
#pragma once
#include <napi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/bf16.h"

namespace ee {

// What gemmCheck and qgemmCheck share: their arguments {isa, m, n, k, precise, seed} (shape-checked;
// `name` for the errors), random inputs from the seed (W [n, k] bf16 uniform in [-1, 1), x [m, k]
// uniform in [-3, 3)), and the batch layouts every output must be bit-identical across.
struct CheckArgs {
  std::string isa;
  int M, N, K;
  bool precise;
  uint64_t seed;
};
CheckArgs check_args(const Napi::CallbackInfo& info, const char* name);
void check_inputs(const CheckArgs& a, std::vector<bf16_t>* w, std::vector<float>* x);
// run(xs, m, n0, n1, y): the kernel on m rows of x from xs, outputs [n0, n1), y [m, N].
using CheckRun = std::function<void(const float* xs, int m, int n0, int n1, float* y)>;
struct CheckLayouts {
  std::vector<float> whole;  // one call
  bool splits_identical;     // 32-row tasks (and the N % 32 tail on its own) give `whole`
  bool rows_identical;       // each row alone (M = 1) gives `whole`
};
CheckLayouts check_layouts(const CheckArgs& a, const float* x, const CheckRun& run);

// gemmCheck({isa, m, n, k, precise, seed}) -> {maxRelErr, splitsIdentical, rowsIdentical, unpackExact}
Napi::Value GemmCheck(const Napi::CallbackInfo& info);
// qgemmCheck({isa, m, n, k, precise, seed}) -> the int8 kernels' report (qgemm_check.cc)
Napi::Value QgemmCheck(const Napi::CallbackInfo& info);
}  // namespace ee
