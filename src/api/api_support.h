#pragma once
// What every C entry point shares: export macros, the communicator handle, and the conversion of
// a Status into an ncclResult_t (recording the message for ncclGetLastError).

#include <atomic>
#include <cstdint>
#include <memory>

#include "nccl.h"
#include "src/base/status.h"
#include "src/core/communicator.h"

/// Marks a definition as part of the exported C API.
#define WEFT_API extern "C" __attribute__((visibility("default")))

/// Exports pnccl<Name>, NCCL's profiling alias, as the same function as nccl<Name>.
#define WEFT_PROFILING_ALIAS(name) \
  extern "C" __attribute__((visibility("default"), alias(#name))) decltype(name) p##name;

/// The object behind ncclComm_t. A destroyed communicator's handle stays allocated (a few bytes)
/// with its magic changed, so that a call on it gets a clear error instead of a crash.
struct ncclComm {
  std::atomic<uint64_t> magic;
  /// Set (release) once the init has ended: then `impl` holds the communicator, or `initStatus`
  /// says why there is none. Until then (a grouped init before its ncclGroupEnd, a nonblocking
  /// init in the background) neither may be read.
  std::atomic<bool> initDone{false};
  std::unique_ptr<weft::core::Communicator> impl;
  weft::Status initStatus;
  /// ncclCommAbort sets it to end an init still running (the init's waits check it).
  std::shared_ptr<std::atomic<bool>> abortInit = std::make_shared<std::atomic<bool>>(false);
};

namespace weft::api {

inline constexpr uint64_t kLiveCommMagic = 0x5745465443f33a11ull;
inline constexpr uint64_t kDestroyedCommMagic = 0x5745465444eadull;

/// Resolves a handle to a ready communicator, or explains why it is not one.
Status resolveComm(ncclComm_t comm, core::Communicator** out);

/// Converts `status` to the C result. A failure is logged (WARN, naming `function`) and becomes the
/// text of ncclGetLastError.
ncclResult_t toResult(const Status& status, const char* function);

/// The message of the calling thread's last failure ("" if none).
const char* lastErrorMessage();

}  // namespace weft::api
