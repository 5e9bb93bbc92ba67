#pragma once
// Logging with NCCL's contract: NCCL_DEBUG=VERSION|WARN|INFO|TRACE, NCCL_DEBUG_SUBSYS,
// NCCL_DEBUG_FILE (%h host, %p pid). Lines look like
//   host:pid:tid [dev] NCCL INFO message
// where dev is the local rank of the communicator the thread made (see setLogDevice).

#include <cstdint>

namespace weft::log {

enum class Level : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

/// Subsystems, as bits (NCCL's names).
enum Subsys : uint32_t {
  kInit = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kShm = 1u << 3,
  kNet = 1u << 4,
  kGraph = 1u << 5,
  kTuning = 1u << 6,
  kEnv = 1u << 7,
  kAlloc = 1u << 8,
  kCall = 1u << 9,
  kProxy = 1u << 10,
  kBootstrap = 1u << 11,
  kReg = 1u << 12,
  kAll = ~0u,
};

/// True if a message of this level and subsystem would be written. Cheap after the first call.
bool enabled(Level level, uint32_t subsys);

/// Writes one line. Thread-safe. Use the WEFT_* macros instead of calling this directly.
void write(Level level, uint32_t subsys, const char* file, int line, const char* format, ...)
    __attribute__((format(printf, 5, 6)));

/// Sets the number printed in brackets for log lines of the calling thread (-1 prints nothing).
void setLogDevice(int device);

/// Re-reads NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE.
void reset();

/// Prints the version banner once per process, at NCCL_DEBUG=VERSION or above.
void printVersionOnce();

}  // namespace weft::log

#define WEFT_LOG_AT(level, subsys, ...)                                      \
  do {                                                                        \
    if (::weft::log::enabled(level, subsys))                                  \
      ::weft::log::write(level, subsys, __FILE__, __LINE__, __VA_ARGS__);     \
  } while (0)

#define WEFT_WARN(...) WEFT_LOG_AT(::weft::log::Level::kWarn, ::weft::log::kAll, __VA_ARGS__)
#define WEFT_INFO(subsys, ...) WEFT_LOG_AT(::weft::log::Level::kInfo, subsys, __VA_ARGS__)
#define WEFT_TRACE(subsys, ...) WEFT_LOG_AT(::weft::log::Level::kTrace, subsys, __VA_ARGS__)
