#include "src/base/fd_mailbox.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <utility>

namespace weft {
namespace {

// The address of `name` in the abstract namespace: a leading NUL, then the name (no terminator).
socklen_t abstractAddress(const std::string& name, sockaddr_un* address) {
  std::memset(address, 0, sizeof(*address));
  address->sun_family = AF_UNIX;
  std::memcpy(address->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

}  // namespace

FdMailbox::~FdMailbox() {
  if (socket_ >= 0) ::close(socket_);
}

FdMailbox::FdMailbox(FdMailbox&& other) noexcept
    : socket_(std::exchange(other.socket_, -1)), name_(std::move(other.name_)) {}

FdMailbox& FdMailbox::operator=(FdMailbox&& other) noexcept {
  if (this != &other) {
    if (socket_ >= 0) ::close(socket_);
    socket_ = std::exchange(other.socket_, -1);
    name_ = std::move(other.name_);
  }
  return *this;
}

Status FdMailbox::open(FdMailbox* out) {
  uint64_t random = 0;
  if (getrandom(&random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    return systemError("getrandom for a descriptor mailbox's name failed: %s", std::strerror(errno));
  }
  char name[kMaxNameBytes];
  std::snprintf(name, sizeof(name), "weft-fd-%d-%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(random));
  FdMailbox mailbox;
  mailbox.name_ = name;
  mailbox.socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (mailbox.socket_ < 0)
    return systemError("socket(AF_UNIX) for a descriptor mailbox failed: %s", std::strerror(errno));
  sockaddr_un address;
  const socklen_t length = abstractAddress(mailbox.name_, &address);
  if (::bind(mailbox.socket_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    return systemError("binding the descriptor mailbox @%s failed: %s", name, std::strerror(errno));
  }
  *out = std::move(mailbox);
  return Status::ok();
}

Status FdMailbox::send(const std::string& name, uint64_t tag, int fd) {
  if (name.empty() || name.size() >= kMaxNameBytes)
    return invalidArgument("no descriptor mailbox is named '%s'", name.c_str());
  const int sender = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sender < 0) return systemError("socket(AF_UNIX) to send a descriptor failed: %s", std::strerror(errno));
  sockaddr_un address;
  const socklen_t length = abstractAddress(name, &address);
  iovec payload{&tag, sizeof(tag)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_name = &address;
  message.msg_namelen = length;
  message.msg_iov = &payload;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  ssize_t sent;
  do {
    // Never waits: a full mailbox (a stranger can fill one) is an error, not a hang.
    sent = ::sendmsg(sender, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (sent < 0 && errno == EINTR);
  const int error = errno;
  ::close(sender);
  if (sent != static_cast<ssize_t>(sizeof(tag))) {
    const bool missing = sent < 0 && (error == ECONNREFUSED || error == ENOENT);
    const bool full = sent < 0 && (error == EAGAIN || error == EWOULDBLOCK);
    const char* why = full ? "the mailbox is full (some other process has filled it)"
                      : sent < 0 ? std::strerror(error)
                                 : "a short message";
    return systemError("sending a descriptor to the mailbox @%s failed: %s%s", name.c_str(), why,
                       missing ? " (is the receiver in another network namespace, such as another container?)" : "");
  }
  return Status::ok();
}

Status FdMailbox::receiveAny(const uint64_t* tags, size_t count, size_t* which, int* fd) {
  for (;;) {
    uint64_t received = 0;
    iovec payload{&received, sizeof(received)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &payload;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t got = ::recvmsg(socket_, &message, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return systemError("the descriptor mailbox @%s holds no descriptor from this communicator's ranks",
                         name_.c_str());
    }
    if (got < 0)
      return systemError("receiving from the descriptor mailbox @%s failed: %s", name_.c_str(), std::strerror(errno));
    int passed = -1;
    const cmsghdr* header = CMSG_FIRSTHDR(&message);
    if (header != nullptr && header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS &&
        header->cmsg_len == CMSG_LEN(sizeof(int))) {
      std::memcpy(&passed, CMSG_DATA(header), sizeof(int));
    }
    const bool whole = got == static_cast<ssize_t>(sizeof(received)) && passed >= 0 &&
                       (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
    const uint64_t* match = whole ? std::find(tags, tags + count, received) : tags + count;
    if (match != tags + count) {
      *which = static_cast<size_t>(match - tags);
      *fd = passed;
      return Status::ok();
    }
    if (passed >= 0) ::close(passed);  // a stranger's, or a malformed message: dropped
  }
}

}  // namespace weft
