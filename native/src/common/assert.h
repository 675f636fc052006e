// Loud invariants. ENGINE_ASSERT is always on (release builds too) and aborts with file:line:
// it guards the engine's own logic, never user input (bad input is an error value, see status.h).
#pragma once
#include <cstdio>
#include <cstdlib>

#define ENGINE_ASSERT(cond)                                                                   \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "ENGINE_ASSERT failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
