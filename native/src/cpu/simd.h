// A thin float-vector wrapper so element-wise kernels are written once and compiled per ISA.
// Included only by the ISA-specific translation units (kernels_avx512.cc, kernels_avx2.cc), which
// are built with matching -m flags; nothing else may include it.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

// The namespace carries the ISA so the two builds of these inline functions never merge at link time.
namespace ee::simd::EE_ISA_NS {

#if defined(__AVX512F__)
struct VF {
  __m512 v;
  static constexpr int W = 16;
};
inline VF load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store(float* p, VF a) { _mm512_storeu_ps(p, a.v); }
inline VF set1(float x) { return {_mm512_set1_ps(x)}; }
inline VF zero() { return {_mm512_setzero_ps()}; }
inline VF add(VF a, VF b) { return {_mm512_add_ps(a.v, b.v)}; }
inline VF sub(VF a, VF b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline VF mul(VF a, VF b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline VF div(VF a, VF b) { return {_mm512_div_ps(a.v, b.v)}; }
inline VF fma(VF a, VF b, VF c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline VF max(VF a, VF b) { return {_mm512_max_ps(a.v, b.v)}; }
inline VF min(VF a, VF b) { return {_mm512_min_ps(a.v, b.v)}; }
inline float reduce_add(VF a) { return _mm512_reduce_add_ps(a.v); }
inline float reduce_max(VF a) { return _mm512_reduce_max_ps(a.v); }
// bf16[W] -> fp32[W]
inline VF load_bf16(const uint16_t* p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
}
inline VF round_int(VF a) { return {_mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)}; }
inline VF scale_pow2(VF x, VF n) { return {_mm512_scalef_ps(x.v, n.v)}; }
#else
struct VF {
  __m256 v;
  static constexpr int W = 8;
};
inline VF load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void store(float* p, VF a) { _mm256_storeu_ps(p, a.v); }
inline VF set1(float x) { return {_mm256_set1_ps(x)}; }
inline VF zero() { return {_mm256_setzero_ps()}; }
inline VF add(VF a, VF b) { return {_mm256_add_ps(a.v, b.v)}; }
inline VF sub(VF a, VF b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline VF mul(VF a, VF b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline VF div(VF a, VF b) { return {_mm256_div_ps(a.v, b.v)}; }
inline VF fma(VF a, VF b, VF c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline VF max(VF a, VF b) { return {_mm256_max_ps(a.v, b.v)}; }
inline VF min(VF a, VF b) { return {_mm256_min_ps(a.v, b.v)}; }
inline float reduce_add(VF a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float reduce_max(VF a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline VF load_bf16(const uint16_t* p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(w, 16))};
}
inline VF round_int(VF a) { return {_mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)}; }
inline VF scale_pow2(VF x, VF n) {
  // x * 2^n for integral n in [-126, 127]: build the float 2^n from its exponent bits.
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127)), 23);
  return {_mm256_mul_ps(x.v, _mm256_castsi256_ps(e))};
}
#endif

// exp(x) in fp32, about 1 ulp over the range the kernels use (softmax arguments <= 0, SiLU).
// Cody-Waite range reduction x = n*ln2 + r, |r| <= ln2/2, then a degree-6 polynomial for e^r.
// NOTE: written by hand because libm's expf does not vectorise here without -ffast-math, and
// -ffast-math would also flush denormals process-wide (crtfastmath) inside Node.
inline VF exp(VF x) {
  x = min(max(x, set1(-87.3f)), set1(88.3f));
  VF n = round_int(mul(x, set1(1.44269504088896341f)));
  VF r = fma(n, set1(-0.693359375f), x);
  r = fma(n, set1(2.12194440e-4f), r);
  VF p = set1(1.9875691500e-4f);
  p = fma(p, r, set1(1.3981999507e-3f));
  p = fma(p, r, set1(8.3334519073e-3f));
  p = fma(p, r, set1(4.1665795894e-2f));
  p = fma(p, r, set1(1.6666665459e-1f));
  p = fma(p, r, set1(5.0000001201e-1f));
  p = fma(p, mul(r, r), add(r, set1(1.0f)));
  return scale_pow2(p, n);
}

}  // namespace ee::simd::EE_ISA_NS
