#include "transport/registry.h"

#include <strings.h>

#include <cstring>
#include <memory>
#include <string>

#include "src/base/knobs.h"
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"
#if WEFT_CUDA
#include "transport/cuda_ipc/transport.h"
#endif

namespace weft::transport {
namespace {

struct Registry {
  std::unique_ptr<Transport> shm = shm::makeShmTransport();
  std::unique_ptr<Transport> socket = socket::makeSocketTransport();
  Transport* ordered[2] = {shm.get(), socket.get()};
#if WEFT_CUDA
  std::unique_ptr<Transport> cudaIpc = cuda_ipc::makeCudaIpcTransport();
#endif
};

const Registry& registry() {
  static const Registry instance;
  return instance;
}

bool isNetwork(const Transport* transport) { return strcmp(transport->name(), "shm") != 0; }

}  // namespace

std::span<Transport* const> allTransports() { return registry().ordered; }

Transport* findTransport(const char* name) {
  for (Transport* transport : allTransports()) {
    if (strcmp(transport->name(), name) == 0) return transport;
  }
#if WEFT_CUDA
  if (strcmp(registry().cudaIpc->name(), name) == 0) return registry().cudaIpc.get();
#endif
  return nullptr;
}

Status pickDeviceTransport(const PeerInfo& self, const PeerInfo& peer, Transport** transport) {
  *transport = nullptr;
#if WEFT_CUDA
  Transport* cudaIpc = registry().cudaIpc.get();
  if (cudaIpc->canConnect(self, peer)) {
    *transport = cudaIpc;
    return Status::ok();
  }
  if (!self.sameHost(peer)) {
    return invalidUsage("rank %d (%s) and rank %d (%s) are on different hosts: GPU buffers between hosts need the "
                        "network proxy, which this version of Weft does not have yet; use host buffers there",
                        self.rank, self.hostname, peer.rank, peer.hostname);
  }
  return invalidUsage("rank %d (CUDA device %d) and rank %d (CUDA device %d): both need a CUDA device for GPU "
                      "buffers",
                      self.rank, self.cudaDevice, peer.rank, peer.cudaDevice);
#else
  return invalidUsage("this build of Weft has no GPU path (built without CUDA): GPU buffers cannot be used");
#endif
}

Status pickTransport(const PeerInfo& self, const PeerInfo& peer, Transport** transport) {
  *transport = nullptr;
  std::string net = knobs::getString(knobs::KnobId::kNet);
  if (!net.empty() && strcasecmp(net.c_str(), "Socket") != 0) {
    return invalidUsage("NCCL_NET=%s names a network this build of Weft does not have; use NCCL_NET=Socket "
                        "or unset it",
                        net.c_str());
  }
  bool shmDisabled = knobs::getBool(knobs::KnobId::kShmDisable);
  for (Transport* candidate : allTransports()) {
    if (shmDisabled && strcmp(candidate->name(), "shm") == 0) continue;
    if (!isNetwork(candidate) || net.empty() || strcasecmp(candidate->name(), net.c_str()) == 0) {
      if (candidate->canConnect(self, peer)) {
        *transport = candidate;
        return Status::ok();
      }
    }
  }
  return invalidUsage("no transport can connect rank %d (%s) and rank %d (%s)", self.rank, self.hostname,
                      peer.rank, peer.hostname);
}

}  // namespace weft::transport
