// qgemmCheck: the int8 GEMM kernels (cpu/qgemm.h) against references on random data, for tests.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "binding/gemm_check.h"
#include "cpu/qgemm.h"

namespace ee {

// W [n, k] bf16 and x [m, k] fp32 from `seed` (x with one outlier column, as activations have);
// W quantized as the loader does, in two row ranges; one activation plane, two when precise. Reports:
//   maxRelErr: max over outputs of |y - ref| / (sum_k |xq wq| sw s), ref the double value of
//     sum_p sum_k xq_p wq * sw * s_p with the integers (wq read back through packed_index8);
//   scalarIdentical: y equals, bit for bit, qgemm.h's scalar epilogue of the exact integer sums
//     (every int8 kernel shares it: all ISAs give the same bits);
//   quantRelErr: max |y - x.w| / sum_k |x w| against the unquantized product in double;
//   splitsIdentical / rowsIdentical: check_layouts (gemm_check.h), as gemmCheck.
Napi::Value QgemmCheck(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CheckArgs args = check_args(info, "qgemmCheck");
  const std::string& isa = args.isa;
  const int M = args.M, N = args.N, K = args.K;
  const bool precise = args.precise;
  // "best": what a load without --isa picks (on AMX hosts AMX-INT8 from 16 rows, AVX512-VNNI below).
  const cpu::Int8Kernels* kern = isa.empty() ? nullptr : cpu::select_int8_kernels(isa == "best" ? "" : isa);
  if (kern == nullptr) throw Napi::Error::New(env, "qgemmCheck: int8 ISA " + isa + " not supported by this CPU");

  std::vector<bf16_t> w;
  std::vector<float> x;
  check_inputs(args, &w, &x);
  for (int m = 0; m < M; ++m) x[size_t(m) * K + size_t(m) % size_t(K)] *= 20.0f;
  const int Kp = cpu::pad_k8(K);
  std::vector<int8_t> q(cpu::packed_bytes8(N, K));
  std::vector<float> sw(static_cast<size_t>(N));
  std::vector<int32_t> ws(static_cast<size_t>(N));
  cpu::quantize_rows(w.data(), N, K, q.data(), sw.data(), ws.data(), 0, N / 2);
  cpu::quantize_rows(w.data(), N, K, q.data(), sw.data(), ws.data(), N / 2, N);
  const cpu::QMatrix qm{q.data(), sw.data(), ws.data()};

  const CheckLayouts lay = check_layouts(args, x.data(), [&](const float* xs, int m, int n0, int n1, float* y) {
    cpu::Act a;
    a.M = m;
    a.K = K;
    a.Kp = Kp;
    a.precise = precise;
    std::vector<uint8_t> buf(cpu::act8_bytes(m, K, precise) + 64);
    a.data = buf.data();
    kern->prepare_act(xs, K, a, 0, m);
    kern->gemm(a, qm, N, n0, n1, y, N);
  });
  const std::vector<float>& whole = lay.whole;

  // The activations' integers and scales per qgemm.h's rule, here in plain scalar code.
  std::vector<int> xq(x.size()), xr(x.size());
  std::vector<float> s1(static_cast<size_t>(M)), s2(static_cast<size_t>(M));
  for (int m = 0; m < M; ++m) {
    float amax = 0;
    for (int k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[size_t(m) * K + k]));
    const float inv = cpu::act_scale_inv(amax), inv2 = inv * cpu::kResidualRatio;
    s1[size_t(m)] = amax / 127.0f;
    s2[size_t(m)] = s1[size_t(m)] / cpu::kResidualRatio;
    for (int k = 0; k < K; ++k) {
      const float v = x[size_t(m) * K + k];
      const int q = std::clamp(int(std::lrintf(v * inv)), -127, 127);
      xq[size_t(m) * K + k] = q;
      xr[size_t(m) * K + k] = std::clamp(int(std::lrintf(std::fma(-float(q), s1[size_t(m)], v) * inv2)), -127, 127);
    }
  }
  double max_rel = 0, quant_rel = 0;
  bool scalar_identical = true;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t d1 = 0, d2 = 0, mag1 = 0, mag2 = 0;
      double ref = 0, refmag = 0;
      for (int k = 0; k < K; ++k) {
        const int wq = q[cpu::packed_index8(N, K, n, k)];
        const size_t i = size_t(m) * K + k;
        d1 += int64_t(xq[i]) * wq;
        d2 += int64_t(xr[i]) * wq;
        mag1 += std::abs(int64_t(xq[i]) * wq);
        mag2 += std::abs(int64_t(xr[i]) * wq);
        const double p = double(x[i]) * double(bf16_to_f32(w[size_t(n) * K + k]));
        ref += p;
        refmag += std::fabs(p);
      }
      const float y = whole[size_t(m) * N + n];
      const double a1 = double(s1[size_t(m)]) * sw[size_t(n)], a2 = double(s2[size_t(m)]) * sw[size_t(n)];
      const double exact = double(d1) * a1 + (precise ? double(d2) * a2 : 0.0);
      const double mag = double(mag1) * a1 + (precise ? double(mag2) * a2 : 0.0);
      max_rel = std::max(max_rel, std::fabs(double(y) - exact) / std::max(mag, 1e-30));
      quant_rel = std::max(quant_rel, std::fabs(double(y) - ref) / std::max(refmag, 1e-30));
      const float want = precise ? cpu::epilogue2(int32_t(d1), int32_t(d2), s1[size_t(m)], s2[size_t(m)], sw[size_t(n)])
                                 : cpu::epilogue1(int32_t(d1), s1[size_t(m)], sw[size_t(n)]);
      scalar_identical = scalar_identical && y == want;
    }
  Napi::Object out = Napi::Object::New(env);
  out.Set("isa", kern->isa);
  out.Set("maxRelErr", max_rel);
  out.Set("quantRelErr", quant_rel);
  out.Set("scalarIdentical", scalar_identical);
  out.Set("splitsIdentical", lay.splits_identical);
  out.Set("rowsIdentical", lay.rows_identical);
  return out;
}

}  // namespace ee
