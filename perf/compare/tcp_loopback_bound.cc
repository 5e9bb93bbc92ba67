// tcp_loopback_bound: the most a ring allreduce over TCP on this machine can reach: -p N processes
// in a ring over loopback TCP (one connection from each rank to the next, as the socket path
// makes), every rank sending to the next and receiving from the previous at the same time. For 2
// processes that is one stream in each direction at once.
//
// For an allreduce of S bytes each operation moves 2(N-1)/N * S bytes over every connection
// (what a ring allreduce of S moves), so busbw is the bytes per second each connection carries and
// time is the least an allreduce of S can take at that rate.
//   tcp_loopback_bound -p 2 -b 8 -e 256M -f 2

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "perf/compare/forked_team.h"
#include "perf/compare/sweep.h"

namespace weft::perf::compare {
namespace {

constexpr int kPollTimeoutMs = 60'000;

// The bytes one connection carries for an allreduce of `bytes` over `ranks`.
size_t linkBytes(size_t bytes, int ranks) {
  return static_cast<size_t>(std::llround(static_cast<double>(bytes) * allReduceBusFactor(ranks)));
}

unsigned char checkByte(int rank, size_t index) {
  return static_cast<unsigned char>((index * 31 + static_cast<size_t>(rank) * 7) % 251);
}

// A listening socket on 127.0.0.1 with a port of the kernel's choice; -1 on failure.
int listenOnLoopback(sockaddr_in* address) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  *address = sockaddr_in{};
  address->sin_family = AF_INET;
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(*address);
  if (bind(fd, reinterpret_cast<sockaddr*>(address), sizeof(*address)) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(address), &length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The ring's connections, made before fork: toNext[r] is rank r's end towards rank r+1 and
// fromPrevious[r] the end on which rank r receives from rank r-1. TCP_NODELAY on every end, as
// the socket transports set.
bool connectRing(int ranks, std::vector<int>* toNext, std::vector<int>* fromPrevious) {
  toNext->assign(static_cast<size_t>(ranks), -1);
  fromPrevious->assign(static_cast<size_t>(ranks), -1);
  for (int rank = 0; rank < ranks; ++rank) {
    const auto next = static_cast<size_t>((rank + 1) % ranks);
    sockaddr_in address{};
    const int listener = listenOnLoopback(&address);
    if (listener < 0) return false;
    const int out = socket(AF_INET, SOCK_STREAM, 0);
    const bool connected = out >= 0 && connect(out, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    const int in = connected ? accept(listener, nullptr, nullptr) : -1;
    close(listener);
    (*toNext)[static_cast<size_t>(rank)] = out;
    (*fromPrevious)[next] = in;
    if (in < 0) return false;
    const int one = 1;
    setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return true;
}

class TcpRing final : public SweepTarget {
 public:
  TcpRing(ForkedTeam& team, int toNext, int fromPrevious, size_t maxBytes)
      : team_(team),
        toNext_(toNext),
        fromPrevious_(fromPrevious),
        maxLinkBytes_(linkBytes(maxBytes, team.ranks())),
        send_(maxLinkBytes_),
        recv_(maxLinkBytes_) {}

  int rank() const override { return team_.rank(); }
  int ranks() const override { return team_.ranks(); }
  double busBandwidthFactor() const override { return allReduceBusFactor(team_.ranks()); }
  RowLabels labels() const override { return kBytesMoved; }

  bool runOnce(size_t bytes, int iter) override {
    const size_t length = linkBytes(bytes, ranks());
    const size_t offset = iterationOffset(length, maxLinkBytes_, iter);
    return exchange(send_.bytes() + offset, recv_.bytes() + offset, length);
  }

  int64_t checkOnce(size_t bytes) override {
    const size_t length = linkBytes(bytes, ranks());
    const int previous = (rank() + ranks() - 1) % ranks();
    for (size_t i = 0; i < length; ++i) send_.bytes()[i] = static_cast<char>(checkByte(rank(), i));
    std::memset(recv_.bytes(), 0, length);
    if (!exchange(send_.bytes(), recv_.bytes(), length)) return static_cast<int64_t>(length);
    int64_t wrong = 0;
    for (size_t i = 0; i < length; ++i) {
      wrong += static_cast<unsigned char>(recv_.bytes()[i]) != checkByte(previous, i) ? 1 : 0;
    }
    return wrong;
  }

  void barrier() override { team_.barrier(); }
  double sumOverRanks(double value) override { return team_.sumOverRanks(value); }

 private:
  // Sends length bytes to the next rank while receiving length bytes from the previous one.
  bool exchange(const char* send, char* recv, size_t length) {
    size_t sent = 0;
    size_t received = 0;
    while (sent < length || received < length) {
      bool progress = false;
      if (sent < length) {
        const ssize_t n = ::send(toNext_, send + sent, length - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<size_t>(n);
          progress = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return failed("send to the next rank");
        }
      }
      if (received < length) {
        const ssize_t n = ::recv(fromPrevious_, recv + received, length - received, MSG_DONTWAIT);
        if (n > 0) {
          received += static_cast<size_t>(n);
          progress = true;
        } else if (n == 0) {
          errno = ECONNRESET;
          return failed("receive from the previous rank (connection closed)");
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return failed("receive from the previous rank");
        }
      }
      if (progress) continue;
      pollfd fds[2] = {{toNext_, static_cast<short>(sent < length ? POLLOUT : 0), 0},
                       {fromPrevious_, static_cast<short>(received < length ? POLLIN : 0), 0}};
      if (poll(fds, 2, kPollTimeoutMs) == 0) {
        errno = ETIMEDOUT;
        return failed("exchange (no progress for 60 s)");
      }
    }
    return true;
  }

  bool failed(const char* what) const {
    std::fprintf(stderr, "tcp_loopback_bound rank %d: %s failed: %s\n", rank(), what, std::strerror(errno));
    return false;
  }

  ForkedTeam& team_;
  int toNext_;
  int fromPrevious_;
  size_t maxLinkBytes_;
  TouchedBuffer send_;
  TouchedBuffer recv_;
};

}  // namespace
}  // namespace weft::perf::compare

int main(int argc, char** argv) {
  using namespace weft::perf::compare;
  SweepOptions options;
  int exitCode = 0;
  if (!parseSweepOptions(argc, argv,
                         "-p processes in a ring over loopback TCP, all streaming at once: the socket path's bound",
                         ExtraFlags{.ranks = true}, &options, &exitCode)) {
    return exitCode;
  }
  if (options.ranks < 2) {
    std::fprintf(stderr, "tcp_loopback_bound: a ring needs -p 2 or more\n");
    return 2;
  }
  std::vector<int> toNext;
  std::vector<int> fromPrevious;
  if (!connectRing(options.ranks, &toNext, &fromPrevious)) {
    std::fprintf(stderr, "tcp_loopback_bound: cannot connect over 127.0.0.1: %s (is the loopback interface up?)\n",
                 std::strerror(errno));
    return 1;
  }
  const int status = ForkedTeam::run(options.ranks, [&](ForkedTeam& team) {
    const auto rank = static_cast<size_t>(team.rank());
    TcpRing target(team, toNext[rank], fromPrevious[rank], options.maxBytes);
    return runSweep(options, "# tcp_loopback_bound: a ring of TCP connections over 127.0.0.1, all streaming at once",
                    target);
  });
  for (size_t rank = 0; rank < toNext.size(); ++rank) {
    close(toNext[rank]);
    close(fromPrevious[rank]);
  }
  return status;
}
