// Rotary position embedding, applied in place to one token's heads. cos/sin are computed in fp32
// from the loader's inv_freq exactly as the reference: angle = float(pos) * inv_freq[i] (one fp32
// multiply), then cos and sin of that fp32 angle.
#pragma once
#include <cmath>

#include "model/config.h"

namespace ee {

// cs: scratch of head_dim floats, filled as [cos_0..cos_{d/2-1}, sin_0..sin_{d/2-1}].
inline void rope_angles(const ModelConfig& cfg, int pos, float* cs) {
  const int half = cfg.head_dim / 2;
  for (int i = 0; i < half; ++i) {
    float angle = float(pos) * cfg.inv_freq[size_t(i)];
    cs[i] = float(std::cos(double(angle)));
    cs[half + i] = float(std::sin(double(angle)));
  }
}

// x: [n_heads, head_dim]. Interleaved (ERNIE-4.5, GPT-J): pairs (2i, 2i+1) rotate by angle i.
// Halves (Llama, NeoX): pairs (i, i + d/2). Same fp32 operations as the reference:
// x*cos + rotate(x)*sin, each product rounded, then added.
inline void rope_apply(const ModelConfig& cfg, const float* cs, float* x, int n_heads) {
  const int d = cfg.head_dim, half = d / 2;
  const float* c = cs;
  const float* s = cs + half;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + size_t(h) * d;
    if (cfg.rope_interleaved) {
      for (int i = 0; i < half; ++i) {
        float a = v[2 * i], b = v[2 * i + 1];
        float ac = a * c[i], bs = b * s[i], bc = b * c[i], as = a * s[i];
        v[2 * i] = ac - bs;
        v[2 * i + 1] = bc + as;
      }
    } else {
      for (int i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        float ac = a * c[i], bs = b * s[i], bc = b * c[i], as = a * s[i];
        v[i] = ac - bs;
        v[i + half] = bc + as;
      }
    }
  }
}

}  // namespace ee
