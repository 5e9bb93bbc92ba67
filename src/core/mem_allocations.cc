#include "src/core/mem_allocations.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <mutex>

#include "src/device/gpu_runtime.h"

namespace weft::core {
namespace {

struct Allocation {
  size_t bytes;
  int fd;           // -1: device memory
  int device = -1;  // device memory's CUDA device
};

std::mutex gMutex;
std::map<const char*, Allocation> gAllocations;  // by base address

Status allocateHostMemory(size_t bytes, void** out, int* fdOut) {
  int fd = memfd_create("weft-memalloc", MFD_CLOEXEC);
  if (fd < 0) return errnoStatus(errno, "ncclMemAlloc: memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status status = errnoStatus(errno, "ncclMemAlloc: reserving %zu bytes", bytes);
    close(fd);
    return status;
  }
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    Status status = errnoStatus(errno, "ncclMemAlloc: mapping %zu bytes", bytes);
    close(fd);
    return status;
  }
  *out = memory;
  *fdOut = fd;
  return Status::ok();
}

}  // namespace

Status allocateMemory(size_t bytes, void** out) {
  void* memory = nullptr;
  int fd = -1;
  int cudaDevice = -1;
  // A process that uses any GPU gets device memory on the calling thread's device (device 0 on a
  // thread that selected none, as in CUDA), though that device is not yet in use.
  WEFT_RETURN_IF_ERROR(device::anyDeviceInUse() ? device::allocateOnDevice(bytes, &memory, &cudaDevice)
                                                : allocateHostMemory(bytes, &memory, &fd));
  std::lock_guard<std::mutex> lock(gMutex);
  gAllocations[static_cast<const char*>(memory)] = Allocation{bytes, fd, cudaDevice};
  *out = memory;
  return Status::ok();
}

Status freeMemory(void* ptr) {
  Allocation allocation{};
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gAllocations.find(static_cast<const char*>(ptr));
    if (it == gAllocations.end()) return invalidArgument("%p was not allocated by ncclMemAlloc", ptr);
    allocation = it->second;
    gAllocations.erase(it);
  }
  if (allocation.fd < 0) {
    const Status freed = device::freeOnDevice(ptr, allocation.device);
    if (!freed.isOk()) {  // still allocated: a later ncclMemFree may try again
      std::lock_guard<std::mutex> lock(gMutex);
      gAllocations.emplace(static_cast<const char*>(ptr), allocation);
    }
    return freed;
  }
  munmap(ptr, allocation.bytes);
  close(allocation.fd);
  return Status::ok();
}

bool duplicateBackingFile(const void* address, size_t bytes, int* fd, size_t* offset) {
  const char* at = static_cast<const char*>(address);
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gAllocations.upper_bound(at);  // the first allocation after `at`
  if (it == gAllocations.begin()) return false;
  --it;
  const auto begin = reinterpret_cast<uintptr_t>(it->first);
  const auto position = reinterpret_cast<uintptr_t>(at);
  const Allocation& allocation = it->second;
  if (allocation.fd < 0 || position - begin > allocation.bytes || bytes > allocation.bytes - (position - begin)) {
    return false;
  }
  const int copy = fcntl(allocation.fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return false;
  *fd = copy;
  *offset = position - begin;
  return true;
}

}  // namespace weft::core
