#include "perf/common/host_buffer.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace weft::perf {

HostBuffer::~HostBuffer() { release(); }

ncclResult_t HostBuffer::allocate(size_t bytes, bool viaNccl) {
  release();
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t rounded = (bytes + page - 1) / page * page;
  if (rounded == 0) rounded = page;
  if (viaNccl) {
    ncclResult_t result = ncclMemAlloc(&data_, rounded);
    if (result != ncclSuccess) {
      data_ = nullptr;
      return result;
    }
  } else if (posix_memalign(&data_, page, rounded) != 0) {
    data_ = nullptr;
    return ncclSystemError;
  }
  // Touch every page now: a first touch inside a timed call would be measured as communication.
  std::memset(data_, 0, rounded);
  size_ = rounded;
  viaNccl_ = viaNccl;
  return ncclSuccess;
}

void HostBuffer::release() {
  if (data_ == nullptr) return;
  if (viaNccl_) {
    (void)ncclMemFree(data_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace weft::perf
