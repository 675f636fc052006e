#include "cpu/kernels.h"

#include <algorithm>

namespace ee::cpu {
namespace avx512 {
extern const Kernels kKernels;
}
namespace avx2 {
extern const Kernels kKernels;
}
namespace amx {
size_t act_bytes(int M, int K);
void prepare_act(const float* x, int ldx, const Act& a, int m0, int m1);
void gemm_bf16(const Act& a, const bf16_t* w, int N, int n0, int n1, float* y, int ldy);
Act act_rows(const Act& a, int m0, int m1);
double dot_peak_bf16(long iters);
const char* bf16_small_rows_kernel();
const char* bf16_tile_order();
}  // namespace amx
bool amx_usable();  // qgemm.h

namespace {
// AMX-BF16 tasks: a GEMM of more than 16 rows (the tile kernel of many rows) in slices of the largest
// of 128, 64 and 32 rows that still gives each thread 4 tasks, so that at 16 threads the 1024-row
// matrices (o_proj, down_proj) are not 8 slices on 8 threads while the others wait; with few threads
// 128-row slices, whose activations are reused across more weight blocks. Fewer rows: 128 (decode
// steps stream the weights; their slices are the runner's). From kRowTaskMinM rows on, each task
// also takes only kRowTaskM input rows, and 128 outputs: a task's activations (64 rows, both planes:
// 256 KiB at K = 1024) and weights (256 KiB) stay in its core's L2, where a task over all rows
// re-read the whole prepared input (2-6 MiB) for every 32 outputs.
// NOTE: from the AMX host's kernel benchmark (bench/results/cpu-amx-kernels-intel.json: 64- and 32-row
// tasks beat 128 at 16 threads, 128 won at 2; session 17, M = 512 at 16 threads: 64 rows x 128 outputs
// 116 ms for the 18 layers' GEMMs (precise) and 64 ms (bf16) against 127 and 76 ms for 32-output tasks
// over all rows; at M = 64 tasks over all rows stayed best).
constexpr int kRowTaskM = 64, kRowTaskMinM = 256, kRowTaskN = 128;
int amx_task_rows(int M, int n_out, int threads) {
  if (M <= 16) return 128;
  if (M >= kRowTaskMinM) return kRowTaskN;
  for (int rows : {128, 64})
    if ((n_out + rows - 1) / rows >= 4 * threads) return rows;
  return 32;
}
int amx_task_m(int M, int, int, int, bool) { return M >= kRowTaskMinM ? kRowTaskM : M; }

// The AVX-512 table with its GEMM on AMX-BF16 tiles (amx.cc), which reads its own activation layout
// (amx_bf16.inc); everything else stays AVX-512.
const Kernels* amx_kernels() {
  static const Kernels k = [] {
    Kernels t = avx512::kKernels;
    t.isa = "amx-bf16";
    t.act_bytes = amx::act_bytes;
    t.prepare_act = amx::prepare_act;
    t.gemm = amx::gemm_bf16;
    t.dot_peak = amx::dot_peak_bf16;
    t.gemm_task_rows = amx_task_rows;
    t.gemm_task_m = amx_task_m;
    t.act_rows = amx::act_rows;
    return t;
  }();
  return &k;
}
}  // namespace

void pack_matrix(const bf16_t* src, int n, int k, bf16_t* dst, int row_begin, int row_end) {
  const int kp = pad_k(k), full = n / kPackRows * kPackRows;
  auto at = [&](const bf16_t* s, int c) { return c < k ? s[c] : bf16_t(0); };
  // Full blocks: pair by pair across the block's rows in range, so the writes run sequentially
  // (128 bytes per pair) and the 32 source rows are read 4 bytes at a time each.
  for (int r0 = row_begin; r0 < std::min(row_end, full);) {
    const int r1 = std::min({row_end, full, (r0 / kPackRows + 1) * kPackRows});
    bf16_t* block = dst + packed_index(n, k, r0 / kPackRows * kPackRows, 0);
    for (int p = 0; p < kp / 2; ++p) {
      bf16_t* d = block + size_t(p) * 2 * kPackRows;
      for (int r = r0; r < r1; ++r) {
        const bf16_t* s = src + size_t(r) * k;
        d[(r % kPackRows) * 2] = at(s, 2 * p);
        d[(r % kPackRows) * 2 + 1] = at(s, 2 * p + 1);
      }
    }
    r0 = r1;
  }
  for (int r = std::max(row_begin, full); r < row_end; ++r) {  // the plain rows after the blocks
    const bf16_t* s = src + size_t(r) * k;
    bf16_t* d = dst + size_t(r) * kp;
    for (int c = 0; c < kp; ++c) d[c] = at(s, c);
  }
}

void unpack_row(const bf16_t* packed, int n, int k, int r, float* out) {
  for (int c = 0; c < k; ++c) out[c] = bf16_to_f32(packed[packed_index(n, k, r, c)]);
}

const char* amx_bf16_small_rows() { return amx_usable() ? amx::bf16_small_rows_kernel() : "none"; }
const char* amx_bf16_tile_order() { return amx_usable() ? amx::bf16_tile_order() : "none"; }

const Kernels* select_kernels(const std::string& force) {
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (force == "amx") return has512 && amx_usable() ? amx_kernels() : nullptr;
  if (force == "avx512") return has512 ? &avx512::kKernels : nullptr;
  if (force == "avx2") return has2 ? &avx2::kKernels : nullptr;
  if (has512 && amx_usable()) return amx_kernels();
  if (has512) return &avx512::kKernels;
  if (has2) return &avx2::kKernels;
  return nullptr;
}

}  // namespace ee::cpu
