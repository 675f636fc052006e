// Structured output: the process's grammar bell. After a step the engine writes each constrained
// choice's new token into its request's shared buffer (RequestSpec::post_token) and rings; the
// sidecar's grammar workers (src/sidecar/grammar/worker.ts) block in wait() between steps and, woken,
// accept the tokens and write the next masks while the engine prepares and runs its next forward
// pass. The tokens reach the workers without the sidecar's main thread (which gets the step's
// outputs later, through the step callback, and may be busy detokenizing the step before).
// One bell for the whole process: a worker woken by another engine's ring (or another pool's
// control message) finds no new token and waits again. A JS Atomics.wait cannot be woken from C++
// (Atomics.notify reaches only waiters of the same V8 wait list), hence this native wait.
#pragma once
#include <cstdint>

namespace ee::grammar_bell {

// Bumps the bell and wakes every waiter; records when (ms_since_ring).
void ring();
// The bell's count (rings so far, modulo 2^32).
uint64_t value();
// Blocks until the count differs from `seen` or timeout_ms passes; true when it differs.
bool wait(uint64_t seen, double timeout_ms);
// Milliseconds since the last ring (-1 before the first).
double ms_since_ring();

}  // namespace ee::grammar_bell
