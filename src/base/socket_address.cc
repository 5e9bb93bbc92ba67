// SocketAddress: the port accessors, printing, and parsing of "host:port" forms.
#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "src/base/socket.h"

namespace weft::net {
namespace {

// Splits "host:port", "[v6]:port" or "v6addr:port" (the last colon separates the port).
Status splitHostPort(const std::string& text, std::string* host, std::string* port) {
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("address '%s' is not of the form [v6address]:port", text.c_str());
    }
    *host = text.substr(1, close - 1);
    *port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return invalidArgument("address '%s' has no port: write host:port, [v6address]:port or v6address:port",
                             text.c_str());
    }
    *host = text.substr(0, colon);
    *port = text.substr(colon + 1);
  }
  if (host->empty()) return invalidArgument("address '%s' has no host before the port", text.c_str());
  return Status::ok();
}

Status parsePort(const std::string& text, const std::string& whole, uint16_t* port) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos) {
    return invalidArgument("address '%s': port '%s' is not a number in [0, 65535]", whole.c_str(), text.c_str());
  }
  long value = strtol(text.c_str(), nullptr, 10);
  if (value > 65535) {
    return invalidArgument("address '%s': port %ld is not in [0, 65535]", whole.c_str(), value);
  }
  *port = static_cast<uint16_t>(value);
  return Status::ok();
}

}  // namespace

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::toString() const {
  char text[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {};
  if (family() == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    std::string host = text;
    if (v6->sin6_scope_id != 0) {
      char name[IF_NAMESIZE] = {};
      host += "%";
      host += if_indextoname(v6->sin6_scope_id, name) ? std::string(name) : std::to_string(v6->sin6_scope_id);
    }
    return "[" + host + "]:" + std::to_string(port());
  }
  return "<unknown address>";
}

Status SocketAddress::parse(const std::string& hostPort, SocketAddress* out) {
  std::string host;
  std::string portText;
  WEFT_RETURN_IF_ERROR(splitHostPort(hostPort, &host, &portText));
  uint16_t port = 0;
  WEFT_RETURN_IF_ERROR(parsePort(portText, hostPort, &port));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* results = nullptr;
  // getaddrinfo accepts numeric v4/v6 (with a %scope suffix) as well as names.
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &results);
  if (rc != 0) {
    return invalidArgument("cannot resolve host '%s' of address '%s': %s; use a numeric address or a name "
                           "this host can resolve",
                           host.c_str(), hostPort.c_str(), rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
  }
  // Prefer IPv4 when a name resolves to both families, as interface selection does.
  const addrinfo* chosen = nullptr;
  for (const addrinfo* entry = results; entry; entry = entry->ai_next) {
    if (entry->ai_family != AF_INET && entry->ai_family != AF_INET6) continue;
    if (!chosen || (entry->ai_family == AF_INET && chosen->ai_family != AF_INET)) chosen = entry;
  }
  if (!chosen || chosen->ai_addrlen > sizeof(sockaddr_storage)) {
    freeaddrinfo(results);
    return invalidArgument("host '%s' of address '%s' has no IPv4 or IPv6 address", host.c_str(),
                           hostPort.c_str());
  }
  SocketAddress address;
  memcpy(&address.storage, chosen->ai_addr, chosen->ai_addrlen);
  address.length = static_cast<socklen_t>(chosen->ai_addrlen);
  freeaddrinfo(results);
  address.setPort(port);
  *out = address;
  return Status::ok();
}

}  // namespace weft::net
