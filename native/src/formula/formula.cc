#include "formula/formula.h"

#include "common/bf16.h"

namespace ee {

uint32_t fnv1a32(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

namespace {
enum class Kind { Norm, Embed, Other };

Kind kind_of(const std::string& name) {
  const std::string suffix = "norm.weight";
  if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return Kind::Norm;
  if (name == "model.embed_tokens.weight") return Kind::Embed;
  return Kind::Other;
}
}  // namespace

void formula_fill(const std::string& name, uint32_t salt, uint64_t begin, uint64_t count, uint16_t* out) {
  const uint32_t seed = fnv1a32(name) ^ salt;
  const Kind kind = kind_of(name);
  for (uint64_t j = 0; j < count; ++j) {
    uint32_t x = seed + uint32_t(begin + j) * 0x9E3779B9u;  // all arithmetic mod 2^32
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    float w;
    switch (kind) {
      case Kind::Norm: w = 1.0f + float(int(x % 31u) - 15) / 128.0f; break;
      case Kind::Embed: w = float(int(x % 255u) - 127) / 512.0f; break;
      default: w = float(int(x % 255u) - 127) / 2048.0f; break;
    }
    out[j] = f32_to_bf16(w);  // exact: every value is representable in bf16
  }
}

}  // namespace ee
