#pragma once
// The status type that every internal function returns, and its propagation macro.

#include <string>
#include <utility>

namespace weft {

/// Error classes. The numeric values equal NCCL's ncclResult_t, so the API layer converts with a cast.
enum class StatusCode : int {
  kOk = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

/// The result of an operation: a code and, on failure, a message that says what happened, where,
/// and what to do. Cheap to return on success (no allocation).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns a copy whose message is `context + ": " + message()`. The code is kept.
  Status withContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// printf-style constructors for failures.
Status makeStatus(StatusCode code, const char* format, ...) __attribute__((format(printf, 2, 3)));
Status systemError(const char* format, ...) __attribute__((format(printf, 1, 2)));
Status internalError(const char* format, ...) __attribute__((format(printf, 1, 2)));
Status invalidArgument(const char* format, ...) __attribute__((format(printf, 1, 2)));
Status invalidUsage(const char* format, ...) __attribute__((format(printf, 1, 2)));
Status remoteError(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// A system error for a failed libc call: "<what>: <strerror(err)>".
Status errnoStatus(int err, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace weft

/// Evaluates `expr` (a Status); returns it from the enclosing function if it is a failure.
#define WEFT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::weft::Status weft_status_ = (expr);        \
    if (!weft_status_.isOk()) return weft_status_; \
  } while (0)
