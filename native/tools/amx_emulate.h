// A software model of the AMX tile operations amx.inc uses, for checking the AMX kernels' logic on
// CPUs without AMX (tools/amx-emu-check.sh builds amx.cc with -DEE_AMX_EMULATE). Semantics as in
// Intel's ISA reference: tiles of `rows` x `colsb` bytes; tdpbf16ps / tdpbssd accumulate
// C[m][n] over A's colsb / 4 k-groups. Never part of the addon.
#pragma once
#include <cstdint>
#include <cstring>

namespace ee::amx_emu {
struct Tile {
  int rows = 0, colsb = 0;
  alignas(64) uint8_t d[16][64];
};
inline thread_local Tile tiles[8];
inline float bf(const uint8_t* p) {
  uint32_t u = uint32_t(p[0] | (p[1] << 8)) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline void config(const void* cfg) {
  const uint8_t* c = static_cast<const uint8_t*>(cfg);
  for (int t = 0; t < 8; ++t) {
    uint16_t cb;
    std::memcpy(&cb, c + 16 + 2 * t, 2);
    tiles[t].rows = c[48 + t];
    tiles[t].colsb = cb;
    std::memset(tiles[t].d, 0, sizeof tiles[t].d);
  }
}
inline void load(int t, const void* p, size_t stride) {
  for (int r = 0; r < tiles[t].rows; ++r)
    std::memcpy(tiles[t].d[r], static_cast<const uint8_t*>(p) + r * stride, size_t(tiles[t].colsb));
}
inline void store(int t, void* p, size_t stride) {
  for (int r = 0; r < tiles[t].rows; ++r)
    std::memcpy(static_cast<uint8_t*>(p) + r * stride, tiles[t].d[r], size_t(tiles[t].colsb));
}
inline void zero(int t) { std::memset(tiles[t].d, 0, sizeof tiles[t].d); }
// The intrinsics guide's order (c += e_0, += o_0, += e_1, ...), or with EE_AMX_EMULATE_SDM the
// Intel SDM's (even and odd products summed apart from zero, then c = (c + even) + odd).
inline void dp_bf16(int c, int a, int b) {
  Tile &C = tiles[c], &A = tiles[a], &B = tiles[b];
  for (int m = 0; m < C.rows; ++m)
    for (int n = 0; n < C.colsb / 4; ++n) {
      float acc, even = 0, odd = 0;
      std::memcpy(&acc, C.d[m] + 4 * n, 4);
      for (int k = 0; k < A.colsb / 4; ++k) {
#ifdef EE_AMX_EMULATE_SDM
        even += bf(A.d[m] + 4 * k) * bf(B.d[k] + 4 * n);
        odd += bf(A.d[m] + 4 * k + 2) * bf(B.d[k] + 4 * n + 2);
#else
        acc += bf(A.d[m] + 4 * k) * bf(B.d[k] + 4 * n);
        acc += bf(A.d[m] + 4 * k + 2) * bf(B.d[k] + 4 * n + 2);
#endif
      }
      acc = acc + even + odd;
      std::memcpy(C.d[m] + 4 * n, &acc, 4);
    }
}
inline void dp_s8(int c, int a, int b) {
  Tile &C = tiles[c], &A = tiles[a], &B = tiles[b];
  for (int m = 0; m < C.rows; ++m)
    for (int n = 0; n < C.colsb / 4; ++n) {
      int32_t acc;
      std::memcpy(&acc, C.d[m] + 4 * n, 4);
      for (int k = 0; k < A.colsb / 4; ++k)
        for (int i = 0; i < 4; ++i) acc += int8_t(A.d[m][4 * k + i]) * int8_t(B.d[k][4 * n + i]);
      std::memcpy(C.d[m] + 4 * n, &acc, 4);
    }
}
}  // namespace ee::amx_emu

#define EE_TILE_CONFIG(c) ee::amx_emu::config(c)
#define EE_TILE_RELEASE() (void)0
#define EE_TILE_ZERO(t) ee::amx_emu::zero(t)
#define EE_TILE_LOAD(t, p, s) ee::amx_emu::load(t, p, s)
#define EE_TILE_STORE(t, p, s) ee::amx_emu::store(t, p, s)
#define EE_TILE_DP_BF16(c, a, b) ee::amx_emu::dp_bf16(c, a, b)
#define EE_TILE_DP_S8(c, a, b) ee::amx_emu::dp_s8(c, a, b)
