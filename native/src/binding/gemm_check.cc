#include "binding/gemm_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "engine/rng.h"

namespace ee {

CheckArgs check_args(const Napi::CallbackInfo& info, const char* name) {
  Napi::Object o = info[0].As<Napi::Object>();
  CheckArgs a{o.Get("isa").As<Napi::String>().Utf8Value(),  o.Get("m").As<Napi::Number>().Int32Value(),
              o.Get("n").As<Napi::Number>().Int32Value(),   o.Get("k").As<Napi::Number>().Int32Value(),
              o.Get("precise").As<Napi::Boolean>().Value(), uint64_t(o.Get("seed").As<Napi::Number>().Int64Value())};
  if (a.M < 1 || a.N < 1 || a.K < 1 || a.M > 4096 || a.N > 65536 || a.K > 16384)
    throw Napi::RangeError::New(info.Env(), std::string(name) + ": bad shape");
  return a;
}

void check_inputs(const CheckArgs& a, std::vector<bf16_t>* w, std::vector<float>* x) {
  Rng rng(a.seed);
  auto next = [&rng] { return float(rng.uniform() * 2.0 - 1.0); };  // uniform in [-1, 1)
  w->resize(size_t(a.N) * a.K);
  for (auto& v : *w) v = f32_to_bf16(next());
  x->resize(size_t(a.M) * a.K);
  for (auto& v : *x) v = next() * 3.0f;
}

CheckLayouts check_layouts(const CheckArgs& a, const float* x, const CheckRun& run) {
  const int M = a.M, N = a.N, K = a.K;
  std::vector<float> whole(size_t(M) * N), split(size_t(M) * N), alone(size_t(M) * N);
  run(x, M, 0, N, whole.data());
  const int full = N / cpu::kPackRows * cpu::kPackRows;
  for (int n0 = 0; n0 < full; n0 += cpu::kPackRows) run(x, M, n0, n0 + cpu::kPackRows, split.data());
  if (full < N) run(x, M, full, N, split.data());
  for (int m = 0; m < M; ++m) run(x + size_t(m) * K, 1, 0, N, alone.data() + size_t(m) * N);
  const size_t bytes = whole.size() * sizeof(float);
  const bool splits = std::memcmp(whole.data(), split.data(), bytes) == 0;
  const bool rows = std::memcmp(whole.data(), alone.data(), bytes) == 0;
  return {std::move(whole), splits, rows};
}

// W [n, k] bf16 and x [m, k] fp32 from `seed`; W packed as the loader packs it. Reports:
//   maxRelErr: max over outputs of |y - ref| / sum_k |x_eff[k] w[k]|, where ref is the double sum
//     of x_eff * w and x_eff is x as the kernel sees it (bf16 hi + lo planes when precise, bf16(x)
//     when not, x itself on AVX2);
//   splitsIdentical / rowsIdentical: check_layouts;
//   unpackExact: unpack_row returns every row of W exactly (W packed in two row ranges).
Napi::Value GemmCheck(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CheckArgs args = check_args(info, "gemmCheck");
  const std::string& isa = args.isa;
  const int M = args.M, N = args.N, K = args.K;
  const bool precise = args.precise;
  const cpu::Kernels* kern = isa == "amx" || isa == "avx512" || isa == "avx2" ? cpu::select_kernels(isa) : nullptr;
  if (kern == nullptr) throw Napi::Error::New(env, "gemmCheck: ISA " + isa + " not supported by this CPU");

  std::vector<bf16_t> w;
  std::vector<float> x;
  check_inputs(args, &w, &x);
  std::vector<bf16_t> packed(cpu::packed_elems(N, K));
  // In two row ranges split at N / 2, as the loader's two packing threads do (mid-block when
  // N / 2 is not a multiple of 32).
  cpu::pack_matrix(w.data(), N, K, packed.data(), 0, N / 2);
  cpu::pack_matrix(w.data(), N, K, packed.data(), N / 2, N);

  bool unpack_exact = true;
  std::vector<float> row(static_cast<size_t>(K));
  for (int r = 0; r < N; ++r) {
    cpu::unpack_row(packed.data(), N, K, r, row.data());
    for (int c = 0; c < K; ++c) unpack_exact = unpack_exact && row[size_t(c)] == bf16_to_f32(w[size_t(r) * K + c]);
  }

  const CheckLayouts lay = check_layouts(args, x.data(), [&](const float* xs, int m, int n0, int n1, float* y) {
    cpu::Act a;
    a.M = m;
    a.K = K;
    a.Kp = cpu::pad_k(K);
    a.precise = precise;
    std::vector<uint8_t> buf(kern->act_bytes(m, K) + 64);
    a.data = buf.data();
    kern->prepare_act(xs, K, a, 0, m);
    kern->gemm(a, packed.data(), N, n0, n1, y, N);
  });
  const std::vector<float>& whole = lay.whole;

  // x as the kernel sees it, once per element.
  const bool bf16_isa = std::string(kern->isa) != "avx2";
  std::vector<double> xe(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float hi = bf16_to_f32(f32_to_bf16(x[i]));
    xe[i] = !bf16_isa ? double(x[i]) : precise ? double(hi) + double(bf16_to_f32(f32_to_bf16(x[i] - hi))) : double(hi);
  }
  double max_rel = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        const double p = xe[size_t(m) * K + k] * double(bf16_to_f32(w[size_t(n) * K + k]));
        ref += p;
        mag += std::fabs(p);
      }
      max_rel = std::max(max_rel, std::fabs(double(whole[size_t(m) * N + n]) - ref) / std::max(mag, 1e-30));
    }
  Napi::Object out = Napi::Object::New(env);
  out.Set("isa", kern->isa);
  out.Set("maxRelErr", max_rel);
  out.Set("splitsIdentical", lay.splits_identical);
  out.Set("rowsIdentical", lay.rows_identical);
  out.Set("unpackExact", unpack_exact);
  return out;
}

}  // namespace ee
