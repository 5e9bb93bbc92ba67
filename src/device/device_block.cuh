#pragma once
// A thread block of the GPU, as the step kernel's loops see it (src/device/kernel_block.h).

#include <cstdint>

#include "src/device/block_progress.cuh"
#include "src/device/kernel_block.h"

namespace weft::device {

class DeviceBlock {
 public:
  /// A wait of the calling thread, in the block's record for hang reports.
  class Wait : public RecordedWait {
   public:
    __device__ explicit Wait(const DeviceBlock& block) : RecordedWait(block.progress_) {}
  };

  /// `sharedBytes`: kBlockSharedBytes of the block's shared memory.
  __device__ DeviceBlock(unsigned char* sharedBytes, const BlockProgressWriter& progress)
      : sharedBytes_(sharedBytes), progress_(progress) {}

  __device__ uint32_t thread() const { return threadIdx.x; }
  __device__ uint32_t threads() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
  __device__ bool syncOr(bool mine) const { return __syncthreads_or(mine ? 1 : 0) != 0; }
  template <class T>
  __device__ T& shared() const {
    static_assert(sizeof(T) <= kBlockSharedBytes && alignof(T) <= 16,
                  "a loop's shared state must fit the block's shared memory");
    return *reinterpret_cast<T*>(sharedBytes_);
  }

  __device__ unsigned long long loadAcquire(const unsigned long long* address) const {
    unsigned long long value;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
    return value;
  }
  __device__ void storeRelease(unsigned long long* address, unsigned long long value) const {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
  }
  __device__ unsigned long long loadAcquireGpu(const unsigned long long* address) const {
    unsigned long long value;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
    return value;
  }
  __device__ void storeReleaseGpu(unsigned long long* address, unsigned long long value) const {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
  }
  __device__ unsigned long long loadOwn(const unsigned long long* address) const {
    return *reinterpret_cast<const volatile unsigned long long*>(address);
  }
  __device__ unsigned fetchAdd(unsigned* address, unsigned value) const { return atomicAdd(address, value); }
  __device__ void fenceSystem() const { __threadfence_system(); }

  __device__ void loadLine(const char* line, uint32_t words[4]) const {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(words[0]), "=r"(words[1]), "=r"(words[2]), "=r"(words[3])
                 : "l"(line)
                 : "memory");
  }
  __device__ void storeLine(char* line, const uint32_t words[4]) const {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(words[0]), "r"(words[1]),
                 "r"(words[2]), "r"(words[3])
                 : "memory");
  }
  __device__ bool aborted(const volatile int* flag) const { return flag != nullptr && *flag != 0; }

 private:
  unsigned char* sharedBytes_;
  const BlockProgressWriter& progress_;
};

}  // namespace weft::device
