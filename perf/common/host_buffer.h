#pragma once
// Page-aligned host memory for the benchmarks' buffers, from the C library or, for -R,
// from ncclMemAlloc.

#include <cstddef>

#include "nccl.h"

namespace weft::perf {

class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  /// Allocates bytes (at least one page) from ncclMemAlloc when viaNccl, else page-aligned from the
  /// C library, and zeroes them (the memory must be host memory). Returns ncclSystemError when the C library has no memory, or ncclMemAlloc's error.
  ncclResult_t allocate(size_t bytes, bool viaNccl);
  void release();

  void* data() const { return data_; }
  char* bytes() const { return static_cast<char*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  bool viaNccl_ = false;
};

}  // namespace weft::perf
