// The choice of network interface, as NCCL makes it (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY).
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/base/socket.h"

namespace weft::net {
namespace {

/// One address of one interface that is up, with its netmask.
struct InterfaceAddress {
  std::string name;
  SocketAddress address;
  SocketAddress netmask;
};

/// NCCL_SOCKET_IFNAME parsed: "^" excludes, "=" matches whole names, otherwise prefixes.
struct IfnameFilter {
  std::vector<std::string> names;
  bool exclude = false;
  bool exact = false;

  bool matches(const std::string& name) const {
    bool listed = std::any_of(names.begin(), names.end(), [&](const std::string& entry) {
      return exact ? name == entry : name.compare(0, entry.size(), entry) == 0;
    });
    return listed != exclude;
  }
};

IfnameFilter parseIfname(std::string text) {
  IfnameFilter filter;
  if (!text.empty() && text[0] == '^') {
    filter.exclude = true;
    text.erase(0, 1);
  }
  if (!text.empty() && text[0] == '=') {
    filter.exact = true;
    text.erase(0, 1);
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) filter.names.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return filter;
}

/// AF_INET, AF_INET6, or AF_UNSPEC when NCCL_SOCKET_FAMILY is unset or not understood.
int requestedFamily() {
  std::string family = knobs::getString(knobs::KnobId::kSocketFamily);
  if (family.empty()) return AF_UNSPEC;
  if (family == "AF_INET") return AF_INET;
  if (family == "AF_INET6") return AF_INET6;
  WEFT_WARN("NCCL_SOCKET_FAMILY=%s is neither AF_INET nor AF_INET6; using both families", family.c_str());
  return AF_UNSPEC;
}

SocketAddress toAddress(const sockaddr* raw) {
  SocketAddress address;
  if (!raw) return address;
  size_t size = raw->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  memcpy(&address.storage, raw, size);
  address.length = static_cast<socklen_t>(size);
  return address;
}

/// Every IPv4/IPv6 address of every interface that is up, in the kernel's order.
Status listAddresses(std::vector<InterfaceAddress>* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return errnoStatus(errno, "cannot list the network interfaces (getifaddrs)");
  out->clear();
  for (ifaddrs* entry = list; entry; entry = entry->ifa_next) {
    if (!entry->ifa_addr || !(entry->ifa_flags & IFF_UP)) continue;
    int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress item{entry->ifa_name, toAddress(entry->ifa_addr), toAddress(entry->ifa_netmask)};
    item.address.setPort(0);
    if (family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&item.address.storage);
      // A link-local address is only usable with the scope id of its interface.
      if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr) && v6->sin6_scope_id == 0) {
        v6->sin6_scope_id = if_nametoindex(entry->ifa_name);
      }
    }
    out->push_back(std::move(item));
  }
  freeifaddrs(list);
  return Status::ok();
}

/// The order of preference among one interface's addresses: IPv4, global IPv6, link-local IPv6.
int addressRank(const SocketAddress& address) {
  if (address.family() == AF_INET) return 0;
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
  return IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr) ? 2 : 1;
}

/// One entry per interface name (its preferred address) among `addresses` that `keep` accepts.
template <class Keep>
std::vector<NetInterface> pickInterfaces(const std::vector<InterfaceAddress>& addresses, int family, Keep keep) {
  std::vector<NetInterface> picked;
  for (const InterfaceAddress& item : addresses) {
    if (family != AF_UNSPEC && item.address.family() != family) continue;
    if (!keep(item.name)) continue;
    auto same = std::find_if(picked.begin(), picked.end(), [&](const NetInterface& p) { return p.name == item.name; });
    if (same == picked.end()) {
      picked.push_back({item.name, item.address});
    } else if (addressRank(item.address) < addressRank(same->address)) {
      same->address = item.address;
    }
  }
  return picked;
}

bool isLoopbackOrDocker(const std::string& name) {
  return name.compare(0, 2, "lo") == 0 || name.compare(0, 6, "docker") == 0;
}

std::string describeAll(const std::vector<InterfaceAddress>& addresses) {
  std::string text;
  std::string lastName;
  for (const InterfaceAddress& item : addresses) {
    std::string host = item.address.toString();
    host = host.substr(0, host.rfind(':'));  // drop the ":0"
    if (item.name != lastName) {
      text += (text.empty() ? "" : "; ") + item.name + " " + host;
      lastName = item.name;
    } else {
      text += ", " + host;
    }
  }
  return text.empty() ? "none that is up" : text;
}

bool sameSubnet(const SocketAddress& a, const SocketAddress& b, const SocketAddress& mask) {
  if (a.family() != b.family() || mask.family() != a.family()) return false;
  const uint8_t* x;
  const uint8_t* y;
  const uint8_t* m;
  size_t size;
  if (a.family() == AF_INET) {
    x = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr);
    y = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(&b.storage)->sin_addr);
    m = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(&mask.storage)->sin_addr);
    size = 4;
  } else {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    const auto* b6 = reinterpret_cast<const sockaddr_in6*>(&b.storage);
    if (IN6_IS_ADDR_LINKLOCAL(&b6->sin6_addr) && b6->sin6_scope_id != 0 && a6->sin6_scope_id != b6->sin6_scope_id) {
      return false;
    }
    x = a6->sin6_addr.s6_addr;
    y = b6->sin6_addr.s6_addr;
    m = reinterpret_cast<const sockaddr_in6*>(&mask.storage)->sin6_addr.s6_addr;
    size = 16;
  }
  for (size_t i = 0; i < size; ++i) {
    if ((x[i] & m[i]) != (y[i] & m[i])) return false;
  }
  return true;
}

}  // namespace

Status findInterfaces(std::vector<NetInterface>* out) {
  std::vector<InterfaceAddress> addresses;
  WEFT_RETURN_IF_ERROR(listAddresses(&addresses));
  int family = requestedFamily();
  std::string ifname = knobs::getString(knobs::KnobId::kSocketIfname);

  std::vector<NetInterface> picked;
  if (!ifname.empty()) {
    IfnameFilter filter = parseIfname(ifname);
    picked = pickInterfaces(addresses, family, [&](const std::string& name) { return filter.matches(name); });
  } else {
    picked = pickInterfaces(addresses, family, [](const std::string& name) { return !isLoopbackOrDocker(name); });
    // InfiniBand (IPoIB) interfaces first, as NCCL prefers them.
    std::stable_partition(picked.begin(), picked.end(),
                          [](const NetInterface& p) { return p.name.compare(0, 2, "ib") == 0; });
    if (picked.empty()) {
      picked = pickInterfaces(addresses, family, [](const std::string& name) { return name.compare(0, 2, "lo") == 0; });
    }
  }
  if (picked.empty()) {
    std::string familyText = knobs::getString(knobs::KnobId::kSocketFamily);
    return systemError(
        "no usable network interface (NCCL_SOCKET_IFNAME=%s, NCCL_SOCKET_FAMILY=%s); interfaces that are up: %s. "
        "Set NCCL_SOCKET_IFNAME to one of them (e.g. NCCL_SOCKET_IFNAME==eth0) and check NCCL_SOCKET_FAMILY",
        ifname.empty() ? "<unset>" : ifname.c_str(), familyText.empty() ? "<unset>" : familyText.c_str(),
        describeAll(addresses).c_str());
  }
  *out = std::move(picked);
  return Status::ok();
}

Status findInterfaceFor(const SocketAddress& remote, NetInterface* out) {
  std::vector<InterfaceAddress> addresses;
  WEFT_RETURN_IF_ERROR(listAddresses(&addresses));
  for (const InterfaceAddress& item : addresses) {
    if (sameSubnet(item.address, remote, item.netmask)) {
      *out = {item.name, item.address};
      return Status::ok();
    }
  }
  std::vector<NetInterface> interfaces;
  WEFT_RETURN_IF_ERROR(findInterfaces(&interfaces).withContext(
      "no interface shares a subnet with " + remote.toString() + ", and choosing one failed"));
  *out = interfaces.front();
  return Status::ok();
}

}  // namespace weft::net
