// int8 GEMMs (--quantization int8): weights quantized once at load, symmetric per output row (one
// fp32 scale each); activations quantized per token (one fp32 scale per row) when a GEMM input is
// prepared. y[m, n] = float(sum_k xq[m, k] * wq[n, k]) * sw[n] * sx[m]: the integer sum is exact
// in any order, and the float epilogue is the same three operations in every kernel, so every int8
// path (AVX512-VNNI, AVX-VNNI, AVX2, AMX-INT8) returns the same bits for the same inputs, whatever
// the batch or thread split.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bf16.h"
#include "cpu/kernels.h"

namespace ee::cpu {

// Packed int8 weight layout ("Q32"): rows in blocks of 32; block b holds, for each k-quad q
// (k = 4q .. 4q + 3), its 32 rows' quads back to back: [row 0: w[4q..4q+3] | row 1 | ... | row 31],
// 128 bytes per quad, Kp / 4 quads. That is the operand order of vpdpbusd (each 32-bit lane one
// quad) for two vectors of 16 outputs, and, read as 16 quads at a stride of 128 bytes, an AMX-INT8
// B tile. Rows past the last full block are stored plainly (Kp bytes each) after the blocks. K is
// zero-padded to Kp, a multiple of 64 (one AMX tile row).
constexpr int kPackK8 = 64;
inline int pad_k8(int k) { return (k + kPackK8 - 1) / kPackK8 * kPackK8; }
inline size_t packed_bytes8(int n, int k) { return size_t(n) * size_t(pad_k8(k)); }
inline size_t packed_index8(int n, int k, int r, int c) {
  const int kp = pad_k8(k), full = n / kPackRows * kPackRows;
  if (r >= full) return size_t(r) * size_t(kp) + size_t(c);
  return size_t(r / kPackRows) * kPackRows * size_t(kp) + size_t(c / 4) * 4 * kPackRows + size_t(r % kPackRows) * 4 +
         size_t(c % 4);
}

// One quantized matrix [n, k]: q packed (Q32), scale[n] = max_k |w[n, k]| / 127 (w = q * scale,
// q in [-127, 127]), wsum[n] = sum_k q[n, k] (the offset kernels' compensation term).
struct QMatrix {
  const int8_t* q = nullptr;
  const float* scale = nullptr;
  const int32_t* wsum = nullptr;
};

// Quantizes rows [row_begin, row_end) of the bf16 matrix src [n, k] into q (packed), scale, wsum.
// Rows are independent: callers split the rows across threads.
void quantize_rows(const bf16_t* src, int n, int k, int8_t* q, float* scale, int32_t* wsum, int row_begin, int row_end);

// Activation quantization, per row: s1 = max |x| / 127; q1 = round_to_nearest_even(x * (127 / max |x|)),
// in [-127, 127]; an all-zero row has s1 = 0 and q1 = 0. Precise (--dtype float32, the default) adds
// a second plane for the residual: s2 = s1 / 254, q2 = round(clamp((x - q1 * s1) / s2)): x ~ q1 s1
// + q2 s2 to about 1/32,000 of max |x| (two int8 GEMMs per output, as the bf16 path's two planes).
// Every kernel's prepare_act computes exactly this (the same float operations), so the integers are
// the same on every path.
inline float act_scale_inv(float amax) { return amax > 0 ? 127.0f / amax : 0.0f; }
constexpr float kResidualRatio = 254.0f;

// The epilogues (each kernel uses these operations in this order, vector or scalar): one plane
// y = float(d1) * sw * s1; two planes y = fma(float(d1), s1, float(d2) * s2) * sw.
inline float epilogue1(int32_t d1, float s1, float sw) { return float(d1) * sw * s1; }
inline float epilogue2(int32_t d1, int32_t d2, float s1, float s2, float sw) {
  return __builtin_fmaf(float(d1), s1, float(d2) * s2) * sw;
}

// Act for int8 kernels (P = 2 planes when a.precise, else 1): plane p = [M][Kp] bytes at
// data + p * M * Kp (s8, or s8 + 128 as u8 for the offset kernels), then s1[M] and s2[M] floats
// at act_scales_offset.
inline int act_planes(bool precise) { return precise ? 2 : 1; }
inline size_t act_scales_offset(int M, int Kp, bool precise) {
  return (size_t(act_planes(precise)) * size_t(M) * size_t(Kp) + 63) / 64 * 64;
}
inline size_t act8_bytes(int M, int K, bool precise) {
  return act_scales_offset(M, pad_k8(K), precise) + 2 * size_t(M) * sizeof(float);
}
inline const float* act_scales(const Act& a) {
  return reinterpret_cast<const float*>(static_cast<const uint8_t*>(a.data) + act_scales_offset(a.M, a.Kp, a.precise));
}

struct Int8Kernels {
  const char* isa;  // "avx512vnni", "avxvnni", "avx2", "amx-int8", "amx-int8/avx512vnni" (the best on AMX hosts)
  // Quantizes rows [m0, m1) of x [M, K] (row stride ldx) into a (a.data sized by act8_bytes, a.Kp =
  // pad_k8(K)); one plane, or two when a.precise.
  void (*prepare_act)(const float* x, int ldx, const Act& a, int m0, int m1);
  // y[m, n] for all m < M and n in [n0, n1): n0 a multiple of 32, n1 too unless it is N.
  void (*gemm)(const Act& a, const QMatrix& w, int N, int n0, int n1, float* y, int ldy);
  // The widest int8 multiply-add on 24 registers, `iters` x 24 times; returns the integer ops done
  // (2 per multiply-add), as Kernels::dot_peak.
  double (*dot_peak)(long iters);
};

// force: "avx512" (AVX512-VNNI), "avxvnni", "avx2", "amx" (AMX-INT8 at every M), or "" for the best this
// CPU (and, for AMX, the kernel: arch_prctl) allows: on AMX hosts AMX-INT8 from 16 rows and AVX512-VNNI
// below (qgemm.cc). nullptr when the CPU lacks it or the name is unknown.
const Int8Kernels* select_int8_kernels(const std::string& force);

// Whether AMX (tile, bf16, int8) is usable: CPUID says so and Linux granted the tile state.
bool amx_usable();

}  // namespace ee::cpu
