// Measures read bandwidth and peak multiply-add rate with the engine's own thread pool: the
// ceilings the benchmark sets its figures against.
#pragma once
#include <cstddef>

#include "common/thread_pool.h"

namespace ee {
// Bytes per second reading a fresh `bytes`-sized buffer (best of several passes).
double measure_read_bandwidth(ThreadPool& pool, size_t bytes);
// FLOP per second of the kernels' widest multiply-add on every pool thread at once (best of
// several passes): the compute ceiling the benchmark sets its figures against.
double measure_compute_peak(ThreadPool& pool, double (*dot_peak)(long iters));
}  // namespace ee
