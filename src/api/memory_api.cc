// Reduction operators, memory allocation and buffer registration.

#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "src/api/api_support.h"
#include "src/core/group.h"
#include "src/device/gpu_runtime.h"

using weft::Status;
using weft::api::resolveComm;
using weft::api::toResult;
using weft::core::Communicator;

namespace {

// ncclMemAlloc's allocations. In a process that uses CUDA (the current device's primary context
// is active), device memory on that device, as NCCL's; elsewhere (host-memory programs, builds or
// machines without CUDA) shared mappings of memfd files, so that a local peer can map the same
// pages later (the registered path).
struct Allocation {
  size_t size;
  int fd;  // -1: device memory
};

std::mutex gAllocationsMutex;
std::map<void*, Allocation> gAllocations;

Status allocateHostMemory(size_t size, void** ptr, int* fdOut) {
  int fd = memfd_create("weft-memalloc", MFD_CLOEXEC);
  if (fd < 0) return weft::errnoStatus(errno, "ncclMemAlloc: memfd_create");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    Status status = weft::errnoStatus(errno, "ncclMemAlloc: reserving %zu bytes", size);
    close(fd);
    return status;
  }
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    Status status = weft::errnoStatus(errno, "ncclMemAlloc: mapping %zu bytes", size);
    close(fd);
    return status;
  }
  *ptr = memory;
  *fdOut = fd;
  return Status::ok();
}

}  // namespace

WEFT_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                               ncclScalarResidence_t residence, ncclComm_t comm) {
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk() && op == nullptr) status = weft::invalidArgument("op is NULL");
  if (status.isOk() && (datatype < 0 || datatype >= ncclNumTypes)) {
    status = weft::invalidArgument("datatype %d is not an ncclDataType_t", static_cast<int>(datatype));
  }
  if (status.isOk() && residence != ncclScalarHostImmediate && residence != ncclScalarDevice) {
    status = weft::invalidArgument("residence %d is not an ncclScalarResidence_t", static_cast<int>(residence));
  }
  int created = 0;
  if (status.isOk()) {
    status = impl->redOps().createPreMulSum(static_cast<weft::algorithms::DataType>(datatype), scalar,
                                            residence == ncclScalarHostImmediate, &created);
  }
  if (status.isOk()) *op = static_cast<ncclRedOp_t>(created);
  return toResult(status, "ncclRedOpCreatePreMulSum");
}
WEFT_PROFILING_ALIAS(ncclRedOpCreatePreMulSum)

WEFT_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk()) status = impl->redOps().destroy(static_cast<int>(op));
  return toResult(status, "ncclRedOpDestroy");
}
WEFT_PROFILING_ALIAS(ncclRedOpDestroy)

WEFT_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return toResult(weft::invalidArgument("ptr is NULL"), "ncclMemAlloc");
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
  void* memory = nullptr;
  int fd = -1;
  const Status status = weft::device::inUse(weft::device::currentDevice())
                            ? weft::device::allocateOnDevice(size, &memory)
                            : allocateHostMemory(size, &memory, &fd);
  if (!status.isOk()) return toResult(status, "ncclMemAlloc");
  {
    std::lock_guard<std::mutex> lock(gAllocationsMutex);
    gAllocations[memory] = Allocation{size, fd};
  }
  *ptr = memory;
  return ncclSuccess;
}
WEFT_PROFILING_ALIAS(ncclMemAlloc)

WEFT_API ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  Allocation allocation{};
  {
    std::lock_guard<std::mutex> lock(gAllocationsMutex);
    auto it = gAllocations.find(ptr);
    if (it == gAllocations.end()) {
      return toResult(weft::invalidArgument("%p was not allocated by ncclMemAlloc", ptr), "ncclMemFree");
    }
    allocation = it->second;
    gAllocations.erase(it);
  }
  if (allocation.fd < 0) return toResult(weft::device::freeOnDevice(ptr), "ncclMemFree");
  munmap(ptr, allocation.size);
  close(allocation.fd);
  return ncclSuccess;
}
WEFT_PROFILING_ALIAS(ncclMemFree)

WEFT_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk() && handle == nullptr) status = weft::invalidArgument("handle is NULL");
  if (status.isOk() && buff == nullptr && size > 0) status = weft::invalidArgument("buff is NULL with size %zu", size);
  // The handle is the registration itself; a transport that can write into the buffer directly
  // (ib) makes what it needs from it on first use.
  if (status.isOk()) *handle = impl->registrations().add(buff, size);
  return toResult(status, "ncclCommRegister");
}
WEFT_PROFILING_ALIAS(ncclCommRegister)

WEFT_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk() && handle == nullptr) status = weft::invalidArgument("handle is NULL");
  if (status.isOk()) status = impl->registrations().remove(handle);
  return toResult(status, "ncclCommDeregister");
}
WEFT_PROFILING_ALIAS(ncclCommDeregister)

WEFT_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                             int winFlags) {
  return toResult(weft::invalidUsage("ncclCommWindowRegister is not implemented in this version of Weft; nothing "
                                     "was registered and the communicator is still usable"),
                  "ncclCommWindowRegister");
}
WEFT_PROFILING_ALIAS(ncclCommWindowRegister)

WEFT_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return toResult(weft::invalidUsage("ncclCommWindowDeregister is not implemented in this version of Weft"),
                  "ncclCommWindowDeregister");
}
WEFT_PROFILING_ALIAS(ncclCommWindowDeregister)
