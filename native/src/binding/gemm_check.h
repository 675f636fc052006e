// gemmCheck: the CPU GEMM kernels against a double-precision reference on random data, for tests
// (tails of N and K that no checkpoint shape reaches, task splits, batch composition).
#pragma once
#include <napi.h>

namespace ee {
// gemmCheck({isa, m, n, k, precise, seed}) -> {maxRelErr, splitsIdentical, rowsIdentical, unpackExact}
Napi::Value GemmCheck(const Napi::CallbackInfo& info);
// qgemmCheck({isa, m, n, k, precise, seed}) -> the int8 kernels' report (qgemm_check.cc)
Napi::Value QgemmCheck(const Napi::CallbackInfo& info);
}  // namespace ee
