#include "transport/ib/gid.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>

namespace weft::transport::ib {

bool isZeroGid(const uint8_t raw[16]) { return std::all_of(raw, raw + 16, [](uint8_t b) { return b == 0; }); }

int gidFamily(const uint8_t raw[16]) {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kMappedPrefix, kMappedPrefix + 12, raw) ? AF_INET : AF_INET6;
}

std::string gidText(const uint8_t raw[16]) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, raw, text, sizeof(text));
  return text;
}

int chooseGid(const std::vector<GidEntry>& table, const GidPreference& preference) {
  auto position = [&](auto&& wanted) -> int {
    for (size_t i = 0; i < table.size(); ++i) {
      if (!isZeroGid(table[i].raw) && wanted(table[i])) return static_cast<int>(i);
    }
    return -1;
  };
  if (preference.index >= 0) return position([&](const GidEntry& e) { return e.index == preference.index; });
  int found = position([&](const GidEntry& e) {
    return e.roceVersion == preference.roceVersion && gidFamily(e.raw) == preference.family;
  });
  if (found < 0) found = position([&](const GidEntry& e) { return gidFamily(e.raw) == preference.family; });
  if (found < 0) found = position([](const GidEntry&) { return true; });
  return found;
}

}  // namespace weft::transport::ib
