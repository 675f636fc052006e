// Measures read bandwidth with the engine's own thread pool: the decode ceiling of the benchmark.
#pragma once
#include <cstddef>

#include "common/thread_pool.h"

namespace ee {
// Bytes per second reading a fresh `bytes`-sized buffer (best of several passes).
double measure_read_bandwidth(ThreadPool& pool, size_t bytes);
}  // namespace ee
