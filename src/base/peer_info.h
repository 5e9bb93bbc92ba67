#pragma once
// What each rank tells the others about itself at init (all-gathered over the bootstrap).
// A plain, fixed-size struct: it travels over the wire as bytes between processes of one build.

#include <cstdint>
#include <string>

#include "src/base/status.h"

namespace weft {

struct PeerInfo {
  int32_t rank = -1;
  int32_t pid = 0;
  int32_t numaNode = -1;      // NUMA node of the rank's CPU affinity; -1 if unknown
  int32_t cudaDevice = -1;    // -1 on host memory
  char gpuBusId[20] = {};     // the PCI bus id of cudaDevice ("0000:3B:00.0"); empty without one
  uint64_t hostHash = 0;      // hash of hostId, for fast comparison
  /// Hash of the machine the process runs on (hostname and boot id), whatever NCCL_HOSTID says:
  /// ranks given different host ids on one machine still share its CPUs.
  uint64_t machineHash = 0;
  uint64_t shmDevice = 0;     // st_dev of the shared-memory folder (WEFT_SHM_DIR)
  int32_t ibPorts = 0;        // verbs ports this rank may use (transport/ib/ports.h); 0: no ib
  /// Random, drawn once per process: tells apart processes that share a pid on one machine
  /// (containers with their own pid namespaces).
  uint32_t processNonce = 0;
  /// Whether cudaDevice reports multicast (NVLS) and whether the process was already using it (its
  /// primary context active) when the communicator was made: src/device/nvls_plan.h.
  uint8_t gpuMulticast = 0;
  uint8_t gpuInUse = 0;
  /// cudaDevice's multiprocessors (0 without one): src/device/residency.h.
  uint16_t gpuMultiprocessors = 0;
  char hostId[128] = {};      // NCCL_HOSTID, or hostname + boot id
  char hostname[64] = {};     // for messages

  bool sameHost(const PeerInfo& other) const;
  /// Whether the two processes run on one machine (and so share its CPUs), even where NCCL_HOSTID
  /// makes them separate hosts.
  bool sameMachine(const PeerInfo& other) const { return machineHash == other.machineHash; }
  /// Whether the two ranks are threads of one process (and so share an address space).
  bool sameProcess(const PeerInfo& other) const {
    return sameMachine(other) && pid == other.pid && processNonce == other.processNonce;
  }
};

/// A random number drawn once per process: with the pid, it tells apart two processes that share a
/// pid in different pid namespaces (containers) of one host. From the clock where the kernel
/// gives no random bytes.
uint32_t thisProcessNonce();

/// Fills the calling process's PeerInfo for `rank`: host identity (NCCL_HOSTID, or the hostname
/// and /proc/sys/kernel/random/boot_id), the machine's identity, pid, the shm folder's device, the
/// NUMA node of the calling thread's CPU affinity.
Status describeLocalPeer(int rank, PeerInfo* info);

/// The host id used for this process: NCCL_HOSTID, else machineId().
std::string localHostId();

/// This machine's identity: "<hostname>:<boot id>".
std::string machineId();

}  // namespace weft
