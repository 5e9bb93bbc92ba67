#include "src/api/api_support.h"

#include <string>

#include "src/base/log.h"

namespace weft::api {
namespace {

thread_local std::string tLastError;

}  // namespace

Status resolveComm(ncclComm_t comm, core::Communicator** out) {
  if (comm == nullptr) return invalidArgument("the communicator is NULL");
  uint64_t magic = comm->magic.load(std::memory_order_acquire);
  if (magic == kDestroyedCommMagic) {
    return invalidArgument("the communicator was destroyed or aborted; create a new one");
  }
  if (magic != kLiveCommMagic) return invalidArgument("%p is not a communicator", static_cast<void*>(comm));
  if (!comm->initDone.load(std::memory_order_acquire)) {
    return invalidUsage("the communicator is not initialized yet: its ncclGroupEnd has not returned, or its "
                        "nonblocking init still runs (poll ncclCommGetAsyncError until it is not ncclInProgress)");
  }
  if (!comm->impl) {
    return Status(comm->initStatus.code(), "the communicator's initialization failed: " + comm->initStatus.message());
  }
  *out = comm->impl.get();
  return Status::ok();
}

ncclResult_t toResult(const Status& status, const char* function) {
  if (status.isOk()) return ncclSuccess;
  tLastError = std::string(function) + ": " + status.message();
  if (status.code() != StatusCode::kInProgress) WEFT_WARN("%s", tLastError.c_str());
  return static_cast<ncclResult_t>(status.code());
}

const char* lastErrorMessage() { return tLastError.c_str(); }

}  // namespace weft::api
