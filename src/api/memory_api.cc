// Reduction operators, memory allocation and buffer registration.

#include "src/api/api_support.h"
#include "src/core/group.h"
#include "src/core/mem_allocations.h"
#include "src/core/windows.h"

using weft::Status;
using weft::api::resolveComm;
using weft::api::toResult;
using weft::core::Communicator;

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
  return toResult(weft::core::allocateMemory(size, ptr), "ncclMemAlloc");
}
WEFT_PROFILING_ALIAS(ncclMemAlloc)

WEFT_API ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  return toResult(weft::core::freeMemory(ptr), "ncclMemFree");
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

namespace {

// Ends a window and its registration.
void dropWindow(Communicator* comm, const void* handle) {
  std::unique_ptr<weft::core::Window> window = comm->windows().take(handle);
  if (window != nullptr) (void)comm->registrations().remove(window->registration());
}

}  // namespace

WEFT_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                             int winFlags) {
  (void)winFlags;  // NCCL_WIN_COLL_SYMMETRIC or not, a window is the same here
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk() && win == nullptr) status = weft::invalidArgument("win is NULL");
  if (win != nullptr) *win = nullptr;
  if (status.isOk() && (buff == nullptr || size == 0)) {
    status = weft::invalidArgument("buff is %p and size %zu: a window needs memory", buff, size);
  }
  if (!status.isOk()) {
    weft::core::Group::current().recordError(status);
    return toResult(status, "ncclCommWindowRegister");
  }
  // A nonblocking launch still running reads the tables changed below.
  impl->waitForBackground();
  // Every rank numbers its registrations in call order, so a window's number is the same on all.
  auto made = std::make_unique<weft::core::Window>(impl->windows().nextNumber(), static_cast<char*>(buff), size,
                                                   impl->nranks());
  weft::core::Window* window = impl->windows().add(std::move(made));
  window->setRegistration(impl->registrations().add(buff, size));
  *win = reinterpret_cast<ncclWindow_t>(window);
  // Collective: inside a group it runs at ncclGroupEnd, so one thread may register for several
  // ranks, in a launch that waits for the communicator's earlier ones and marks it busy (`uses`);
  // the user's handle is cleared there if it fails, and the communicator records the failure.
  weft::core::Group::InitJob job;
  job.run = [impl, window, win]() -> Status {
    Status exchanged = window->exchange(*impl);
    if (!exchanged.isOk()) {
      dropWindow(impl, window);
      *win = nullptr;
      impl->setAsyncError(exchanged);
    }
    return exchanged;
  };
  job.cancel = [impl, window, win](const Status&) {
    dropWindow(impl, window);
    *win = nullptr;
  };
  job.serialKey = impl;
  job.uses = impl;
  return toResult(weft::core::Group::current().submitInit(std::move(job), true), "ncclCommWindowRegister");
}
WEFT_PROFILING_ALIAS(ncclCommWindowRegister)

WEFT_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  Communicator* impl = nullptr;
  Status status = resolveComm(comm, &impl);
  if (status.isOk() && win == nullptr) return ncclSuccess;  // as NCCL: no window, nothing to do
  // A nonblocking launch still running may read the window.
  if (status.isOk()) impl->waitForBackground();
  const auto* live = status.isOk() ? impl->windows().find(win) : nullptr;
  if (status.isOk() && live == nullptr) {
    status = weft::invalidArgument("window %p is not a window of this communicator (already deregistered, or from "
                                   "another communicator's ncclCommWindowRegister)",
                                   static_cast<void*>(win));
  }
  if (status.isOk() && live->pending()) {
    status = weft::invalidUsage("window %p was registered in a group that has not ended: deregister it after "
                                "ncclGroupEnd",
                                static_cast<void*>(win));
  }
  if (status.isOk()) dropWindow(impl, win);
  return toResult(status, "ncclCommWindowDeregister");
}
WEFT_PROFILING_ALIAS(ncclCommWindowDeregister)
