// Checks the AMX kernels (amx.cc, built with -DEE_AMX_EMULATE onto tools/amx_emulate.h) on CPUs
// without AMX: AMX-BF16 against a double reference and bit-identical per row whatever the batch;
// AMX-INT8 bit-identical to the AVX512-VNNI kernel; the AVX-512 model of the tile arithmetic
// (small M) chosen and bit-identical to the tiles. Run by tools/amx-emu-check.sh; exit 1 on failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/qgemm.h"

namespace ee::cpu::amx {
size_t act_bytes(int M, int K);
void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1);
void gemm_bf16(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy);
Act act_rows(const Act& a, int m0, int m1);
const char* bf16_small_rows_kernel();
const char* bf16_tile_order();
extern const Int8Kernels kInt8Kernels;
}  // namespace ee::cpu::amx

using namespace ee;
using namespace ee::cpu;

static int failures = 0;
static void check(bool ok, const char* what, int m, int n, int k, bool precise) {
  if (!ok) {
    ++failures;
    std::printf("FAIL %s M=%d N=%d K=%d precise=%d\n", what, m, n, k, precise);
  }
}

int main() {
  const Kernels* k512 = select_kernels("avx512");
  const Int8Kernels* v512 = select_int8_kernels("avx512");
  if (!k512 || !v512) {
    std::printf("skipped: the reference kernels need AVX512-BF16 and AVX512-VNNI\n");
    return 0;
  }
  // The AVX-512 model of the tile arithmetic that bf16 GEMMs of up to 4 rows take: it must match the
  // emulated tiles (then rowsIdentical below compares the model at M = 1 with tiles at M > 4).
  const char* small = amx::bf16_small_rows_kernel();
  std::printf("bf16 rows <= 4: %s\n", small);
  check(std::strcmp(small, "amx-bf16") != 0, "a tile model matches", 0, 0, 0, false);
  // The scalar diagnosis of the tile order (for hosts where no model matches) names the same order.
  const char* order = amx::bf16_tile_order();
  std::printf("bf16 tile order: %s\n", order);
  check(std::strstr(small, (std::string(order) + " model").c_str()) != nullptr, "the diagnosed order is the model's", 0,
        0, 0, false);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const int shapes[][3] = {{1, 64, 64}, {16, 32, 32},   {17, 64, 96},   {33, 96, 1024}, {45, 100, 70},
                           {3, 31, 45}, {64, 256, 256}, {80, 128, 128}, {5, 64, 80}};
  for (auto& s : shapes)
    for (bool precise : {true, false}) {
      const int M = s[0], N = s[1], K = s[2];
      std::vector<bf16_t> w(size_t(N) * K);
      for (auto& v : w) v = f32_to_bf16(u(rng));
      std::vector<float> x(size_t(M) * K);
      for (auto& v : x) v = 3 * u(rng);
      // bf16
      std::vector<bf16_t> packed(packed_elems(N, K));
      pack_matrix(w.data(), N, K, packed.data(), 0, N);
      auto run16 = [&](const float* xs, int m, float* y) {
        Act a;
        a.M = m, a.K = K, a.Kp = pad_k(K), a.precise = precise;
        std::vector<uint8_t> buf(amx::act_bytes(m, K) + 64);
        a.data = buf.data();
        // In 16-row slices, as the model runner prepares a step's rows.
        for (int m0 = 0; m0 < m; m0 += 16) amx::prepare_act(xs, K, a, m0, std::min(m, m0 + 16));
        amx::gemm_bf16(a, packed.data(), N, 0, N, y, N);
      };
      std::vector<float> y(size_t(M) * N), alone(size_t(M) * N);
      run16(x.data(), M, y.data());
      for (int m = 0; m < M; ++m) run16(x.data() + size_t(m) * K, 1, alone.data() + size_t(m) * N);
      check(std::memcmp(y.data(), alone.data(), y.size() * 4) == 0, "bf16 rowsIdentical", M, N, K, precise);
      // In tasks of 32 input rows (act_rows) x 32 outputs, as the model runner's tasks of rows and outputs.
      {
        Act a;
        a.M = M, a.K = K, a.Kp = pad_k(K), a.precise = precise;
        std::vector<uint8_t> buf(amx::act_bytes(M, K) + 64);
        a.data = buf.data();
        for (int m0 = 0; m0 < M; m0 += 16) amx::prepare_act(x.data(), K, a, m0, std::min(M, m0 + 16));
        std::vector<float> tiled(size_t(M) * N);
        for (int m0 = 0; m0 < M; m0 += 32)
          for (int n0 = 0; n0 < N; n0 += 32)
            amx::gemm_bf16(amx::act_rows(a, m0, std::min(M, m0 + 32)), packed.data(), N, n0, std::min(N, n0 + 32),
                           tiled.data() + size_t(m0) * N, N);
        check(std::memcmp(y.data(), tiled.data(), y.size() * 4) == 0, "bf16 rowTasksIdentical", M, N, K, precise);
      }
      double worst = 0;
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double ref = 0, mag = 0;
          for (int k = 0; k < K; ++k) {
            const float hi = bf16_to_f32(f32_to_bf16(x[size_t(m) * K + k]));
            const double xe = precise ? double(hi) + double(bf16_to_f32(f32_to_bf16(x[size_t(m) * K + k] - hi))) : hi;
            ref += xe * bf16_to_f32(w[size_t(n) * K + k]);
            mag += std::fabs(xe * bf16_to_f32(w[size_t(n) * K + k]));
          }
          worst = std::max(worst, std::fabs(y[size_t(m) * N + n] - ref) / std::max(mag, 1e-30));
        }
      check(worst < 2e-6, "bf16 maxRelErr", M, N, K, precise);
      // int8
      std::vector<int8_t> q(packed_bytes8(N, K));
      std::vector<float> sw(static_cast<size_t>(N));
      std::vector<int32_t> ws(static_cast<size_t>(N));
      quantize_rows(w.data(), N, K, q.data(), sw.data(), ws.data(), 0, N);
      const QMatrix qm{q.data(), sw.data(), ws.data()};
      auto run8 = [&](const Int8Kernels* kk, const float* xs, int m, float* yy) {
        Act a;
        a.M = m, a.K = K, a.Kp = pad_k8(K), a.precise = precise;
        std::vector<uint8_t> buf(act8_bytes(m, K, precise) + 64);
        a.data = buf.data();
        kk->prepare_act(xs, K, a, 0, m);
        kk->gemm(a, qm, N, 0, N, yy, N);
      };
      std::vector<float> ya(size_t(M) * N), yv(size_t(M) * N);
      run8(&amx::kInt8Kernels, x.data(), M, ya.data());
      run8(v512, x.data(), M, yv.data());
      check(std::memcmp(ya.data(), yv.data(), ya.size() * 4) == 0, "int8 identical to avx512vnni", M, N, K, precise);
      std::printf("M=%d N=%d K=%d precise=%d: bf16 max rel err %.2e\n", M, N, K, precise, worst);
    }
  std::printf(failures ? "%d FAILED\n" : "all passed\n", failures);
  return failures ? 1 : 0;
}
