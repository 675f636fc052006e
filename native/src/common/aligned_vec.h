#pragma once
// std::vector on 64-byte-aligned storage (one cache line; an AMX tile row).

#include <cstddef>
#include <new>
#include <vector>

namespace ee {

// Allocator of 64-byte-aligned storage for the step buffers: the AMX tile rows (64 bytes) of the
// prepared activations and of the GEMM outputs each fall in one cache line, and a task's outputs share
// no line with the next task's.
template <typename T>
struct CacheLineAlloc {
  using value_type = T;
  CacheLineAlloc() = default;
  template <typename U>
  CacheLineAlloc(const CacheLineAlloc<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const CacheLineAlloc&) const { return true; }
};
template <typename T>
using AlignedVec = std::vector<T, CacheLineAlloc<T>>;

}  // namespace ee
