#pragma once
// Finds the TCP ports that processes listen on, as a port scanner on the same host would, from
// /proc/net/tcp{,6} (sockets and their inodes) and /proc/<pid>/fd (which process holds which).

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <netinet/in.h>

namespace weft::reliability {

/// A listening TCP socket: where to connect to reach it.
struct ListeningSocket {
  sockaddr_storage address{};  // a wildcard address is replaced by the loopback address
  socklen_t length = 0;
  uint16_t port = 0;
};

/// The listening sockets that any of `pids` holds (through a file descriptor).
std::vector<ListeningSocket> listeningSocketsOf(const std::vector<pid_t>& pids);

/// The processes whose parent is `parent`.
std::vector<pid_t> childrenOf(pid_t parent);

/// True if this process holds a descriptor of a socket listening on TCP `port`.
bool thisProcessListensOn(uint16_t port);

/// "127.0.0.1:4242" or "[::1]:4242".
std::string addressText(const sockaddr_storage& address);

}  // namespace weft::reliability
