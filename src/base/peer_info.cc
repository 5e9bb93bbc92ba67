#include "src/base/peer_info.h"

#include <sched.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "src/base/knobs.h"
#include "src/base/numa.h"

namespace weft {
namespace {

uint64_t fnv1a(const char* text) {
  uint64_t hash = 1469598103934665603ull;
  for (const char* p = text; *p; ++p) hash = (hash ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return hash;
}

}  // namespace

bool PeerInfo::sameHost(const PeerInfo& other) const {
  return hostHash == other.hostHash && strncmp(hostId, other.hostId, sizeof(hostId)) == 0;
}

std::string localHostId() {
  std::string configured = knobs::getString(knobs::KnobId::kHostId);
  return configured.empty() ? machineId() : configured;
}

std::string machineId() {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  std::string bootId;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, bootId);
  return std::string(host) + ":" + bootId;
}

uint32_t thisProcessNonce() {
  static const uint32_t nonce = [] {
    uint32_t value = 0;
    if (getrandom(&value, sizeof(value), 0) == static_cast<ssize_t>(sizeof(value))) return value;
    // Where the kernel gives nothing (seccomp, say): the clock and this frame's randomized address.
    // A fixed value would leave the pid alone to tell apart containers' processes, often pid 1 each.
    const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    const uint64_t mixed = now ^ (reinterpret_cast<uintptr_t>(&value) >> 4);
    return static_cast<uint32_t>(mixed ^ (mixed >> 32));
  }();
  return nonce;
}

Status describeLocalPeer(int rank, PeerInfo* info) {
  *info = PeerInfo{};
  info->rank = rank;
  info->pid = getpid();
  info->processNonce = thisProcessNonce();
  std::string hostId = localHostId();
  snprintf(info->hostId, sizeof(info->hostId), "%s", hostId.c_str());
  info->hostHash = fnv1a(info->hostId);
  info->machineHash = fnv1a(machineId().c_str());
  gethostname(info->hostname, sizeof(info->hostname) - 1);
  std::string shmDir = knobs::getString(knobs::KnobId::kShmDir);
  struct stat st {};
  if (stat(shmDir.c_str(), &st) == 0) info->shmDevice = st.st_dev;
  info->numaNode = numaNodeOfAffinity();
  return Status::ok();
}

}  // namespace weft
