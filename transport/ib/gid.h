#pragma once
// Which GID a RoCE port addresses its peers with, as NCCL picks it: NCCL_IB_GID_INDEX when set,
// else the first GID of RoCE version NCCL_IB_ROCE_VERSION_NUM (default 2) and address family
// NCCL_IB_ADDR_FAMILY (default AF_INET: an IPv4-mapped GID, ::ffff:a.b.c.d), else the closest
// match (the family, then any valid GID). InfiniBand ports address by LID and use index 0.
// Pure: the table is read elsewhere (ports.cc).

#include <cstdint>
#include <string>
#include <vector>

namespace weft::transport::ib {

struct GidEntry {
  int index = 0;
  uint8_t raw[16] = {};
  int roceVersion = 0;  // 1 or 2; 0 when unknown (InfiniBand, or no type in sysfs)
};

struct GidPreference {
  int index = -1;        // NCCL_IB_GID_INDEX; -1: choose
  int roceVersion = 2;   // NCCL_IB_ROCE_VERSION_NUM
  int family = 0;        // AF_INET or AF_INET6 (NCCL_IB_ADDR_FAMILY)
};

/// True for the all-zero GID (an unused table entry).
bool isZeroGid(const uint8_t raw[16]);
/// AF_INET for an IPv4-mapped GID, else AF_INET6.
int gidFamily(const uint8_t raw[16]);
/// The GID as text ("::ffff:10.0.2.15", "fe80::5054:ff:fe12:3456").
std::string gidText(const uint8_t raw[16]);

/// The position in `table` of the GID to use, or -1 when no entry is usable (every GID zero, or
/// the forced index absent or zero).
int chooseGid(const std::vector<GidEntry>& table, const GidPreference& preference);

}  // namespace weft::transport::ib
