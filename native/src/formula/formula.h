// "Formula weights": a deterministic checkpoint of any shape, bit-exact per
// test/fixtures/golden/SPEC.md, so tests, benchmarks and the embedded default need no download.
#pragma once
#include <cstdint>
#include <string>

namespace ee {

uint32_t fnv1a32(const std::string& s);

// out[j] = bf16 weight of flat index begin + j of tensor `name`, for j < count.
void formula_fill(const std::string& name, uint32_t salt, uint64_t begin, uint64_t count, uint16_t* out);

}  // namespace ee
