#include "src/base/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace weft {
namespace {

std::string formatV(const char* format, va_list args) {
  char buffer[1024];
  va_list copy;
  va_copy(copy, args);
  int length = vsnprintf(buffer, sizeof(buffer), format, copy);
  va_end(copy);
  if (length < 0) return format;
  if (static_cast<size_t>(length) < sizeof(buffer)) return std::string(buffer, length);
  std::string result(length, '\0');
  vsnprintf(result.data(), length + 1, format, args);
  return result;
}

}  // namespace

Status Status::withContext(const std::string& context) const {
  if (isOk()) return *this;
  return Status(code_, context + ": " + message_);
}

#define WEFT_DEFINE_STATUS_MAKER(function, code)   \
  Status function(const char* format, ...) {       \
    va_list args;                                  \
    va_start(args, format);                        \
    std::string message = formatV(format, args);   \
    va_end(args);                                  \
    return Status(code, std::move(message));       \
  }

WEFT_DEFINE_STATUS_MAKER(systemError, StatusCode::kSystemError)
WEFT_DEFINE_STATUS_MAKER(internalError, StatusCode::kInternalError)
WEFT_DEFINE_STATUS_MAKER(invalidArgument, StatusCode::kInvalidArgument)
WEFT_DEFINE_STATUS_MAKER(invalidUsage, StatusCode::kInvalidUsage)
WEFT_DEFINE_STATUS_MAKER(remoteError, StatusCode::kRemoteError)
#undef WEFT_DEFINE_STATUS_MAKER

Status makeStatus(StatusCode code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string message = formatV(format, args);
  va_end(args);
  return Status(code, std::move(message));
}

Status errnoStatus(int err, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string message = formatV(format, args);
  va_end(args);
  char buffer[256];
  const char* text = strerror_r(err, buffer, sizeof(buffer));
  return Status(StatusCode::kSystemError, message + ": " + text);
}

}  // namespace weft
