// Engine threads are throughput work: mark them SCHED_BATCH with a lower nice value, so the
// latency-sensitive Node threads (sidecar, gateway, clients on the same cores) preempt them on
// wake-up instead of queueing behind a step. NOTE: on 2 cores with the engine using both, SSE
// delivery through the gateway otherwise lags the engine by seconds and tokens arrive in bursts
// (bench:serve); the engine loses only the little CPU those threads need.
#pragma once

namespace ee {
// Applies to the calling thread; best effort (ignored where the OS refuses).
void lower_thread_priority();
}  // namespace ee
