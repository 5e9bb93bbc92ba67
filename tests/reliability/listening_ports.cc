#include "tests/reliability/listening_ports.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/reliability/process_census.h"

namespace weft::reliability {
namespace {

constexpr const char* kListenState = "0A";

/// One line of /proc/net/tcp{,6} in the LISTEN state.
struct ProcListener {
  ListeningSocket socket;
  unsigned long inode = 0;
};

/// Parses "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6): the kernel prints the address
/// as the 32-bit words of its memory, each in host byte order.
bool parseProcAddress(const std::string& text, ListeningSocket* out) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  std::string hex = text.substr(0, colon);
  unsigned port = 0;
  if (std::sscanf(text.c_str() + colon + 1, "%x", &port) != 1) return false;
  uint32_t words[4] = {};
  size_t nwords = hex.size() / 8;
  if ((nwords != 1 && nwords != 4) || hex.size() % 8 != 0) return false;
  for (size_t w = 0; w < nwords; ++w) {
    unsigned value = 0;
    if (std::sscanf(hex.substr(w * 8, 8).c_str(), "%x", &value) != 1) return false;
    words[w] = value;
  }
  out->port = static_cast<uint16_t>(port);
  if (nwords == 1) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out->address);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(out->port);
    std::memcpy(&v4->sin_addr, &words[0], 4);
    if (v4->sin_addr.s_addr == htonl(INADDR_ANY)) v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    out->length = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out->address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(out->port);
    std::memcpy(&v6->sin6_addr, words, 16);
    if (IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)) v6->sin6_addr = in6addr_loopback;
    out->length = sizeof(sockaddr_in6);
  }
  return true;
}

std::vector<ProcListener> procListeners() {
  std::vector<ProcListener> listeners;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column titles
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
      unsigned long inode = 0;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) {
        continue;
      }
      ProcListener listener;
      if (state != kListenState || !parseProcAddress(local, &listener.socket)) continue;
      listener.inode = inode;
      listeners.push_back(listener);
    }
  }
  return listeners;
}

/// Inodes of the sockets that `pid` holds descriptors of.
std::set<unsigned long> socketInodesOf(pid_t pid) {
  std::set<unsigned long> inodes;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const std::string& name : folderEntries(dir)) {
    char target[PATH_MAX] = {};
    std::string link = dir + "/" + name;
    ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
    unsigned long inode = 0;
    if (length > 0 && std::sscanf(target, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
  }
  return inodes;
}

}  // namespace

std::vector<ListeningSocket> listeningSocketsOf(const std::vector<pid_t>& pids) {
  std::set<unsigned long> held;
  for (pid_t pid : pids) {
    std::set<unsigned long> inodes = socketInodesOf(pid);
    held.insert(inodes.begin(), inodes.end());
  }
  std::vector<ListeningSocket> sockets;
  for (const ProcListener& listener : procListeners()) {
    if (held.count(listener.inode) != 0) sockets.push_back(listener.socket);
  }
  return sockets;
}

std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const std::string& name : folderEntries("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      children.push_back(static_cast<pid_t>(std::stoi(name)));
    }
  }
  return children;
}

bool thisProcessListensOn(uint16_t port) {
  for (const ListeningSocket& socket : listeningSocketsOf({getpid()})) {
    if (socket.port == port) return true;
  }
  return false;
}

std::string addressText(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
  inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
  return "[" + std::string(text) + "]:" + std::to_string(ntohs(v6->sin6_port));
}

}  // namespace weft::reliability
