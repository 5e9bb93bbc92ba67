#pragma once
// Handing a file descriptor to another process of the same machine (as NCCL does for the CUDA
// handles it shares): a datagram socket in Linux's abstract unix namespace receives descriptors
// sent with SCM_RIGHTS. Each descriptor travels with a 64-bit tag that only the communicator's
// ranks know (agreed over the authenticated bootstrap); a descriptor with any other tag, which any
// local process could send, is closed and ignored.

#include <cstdint>
#include <string>

#include "src/base/status.h"

namespace weft {

class FdMailbox {
 public:
  FdMailbox() = default;
  ~FdMailbox();
  FdMailbox(FdMailbox&& other) noexcept;
  FdMailbox& operator=(FdMailbox&& other) noexcept;
  FdMailbox(const FdMailbox&) = delete;
  FdMailbox& operator=(const FdMailbox&) = delete;

  /// Opens a mailbox under a fresh random name (name()), which the owner hands to its senders.
  static Status open(FdMailbox* out);
  /// The mailbox's name in the abstract namespace (no leading NUL), at most kMaxNameBytes - 1 bytes.
  const std::string& name() const { return name_; }
  static constexpr size_t kMaxNameBytes = 64;

  /// Sends a duplicate of `fd` with `tag` to the mailbox `name` (of this network namespace). Never
  /// waits: the descriptor is queued in the mailbox when this returns, or it is an error (no such
  /// mailbox, or a full one).
  static Status send(const std::string& name, uint64_t tag, int fd);

  /// Takes a queued descriptor sent with `tag` into *fd (the caller owns it), closing any queued
  /// before it with another tag. Does not wait: an error if none with `tag` is queued.
  Status receive(uint64_t tag, int* fd) {
    size_t which = 0;
    return receiveAny(&tag, 1, &which, fd);
  }
  /// Takes the first queued descriptor sent with any of `tags[0..count)` into *fd, and which tag
  /// it came with into *which, closing any queued before it with another tag. Does not wait.
  Status receiveAny(const uint64_t* tags, size_t count, size_t* which, int* fd);

 private:
  int socket_ = -1;
  std::string name_;
};

}  // namespace weft
