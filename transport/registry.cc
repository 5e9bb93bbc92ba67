#include "transport/registry.h"

#include <strings.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "src/base/knobs.h"
#include "src/base/log.h"
#if WEFT_IB
#include "transport/ib/ports.h"
#include "transport/ib/transport.h"
#endif
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"
#if WEFT_CUDA
#include "transport/cuda_ipc/transport.h"
#include "transport/proxy/transport.h"
#endif

namespace weft::transport {
namespace {

struct Registry {
  std::unique_ptr<Transport> shm = shm::makeShmTransport();
  std::unique_ptr<Transport> socket = socket::makeSocketTransport();
#if WEFT_IB
  std::unique_ptr<Transport> ib = ib::makeIbTransport();
  Transport* ordered[3] = {shm.get(), ib.get(), socket.get()};
#else
  Transport* ordered[2] = {shm.get(), socket.get()};
#endif
#if WEFT_CUDA
  std::unique_ptr<Transport> cudaIpc = cuda_ipc::makeCudaIpcTransport();
  // GPU buffers between hosts: each network behind a proxy thread.
  std::unique_ptr<Transport> socketProxy = proxy::makeProxyTransport(socket.get(), proxy::allocatePinnedStaging);
#if WEFT_IB
  std::unique_ptr<Transport> ibProxy = proxy::makeProxyTransport(ib.get(), proxy::allocatePinnedStaging);
  Transport* proxies[2] = {ibProxy.get(), socketProxy.get()};
#else
  Transport* proxies[1] = {socketProxy.get()};
#endif
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
  for (Transport* proxied : registry().proxies) {
    if (strcmp(proxied->name(), name) == 0) return proxied;
  }
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
    // Another host: the network the host path would take, behind the proxy.
    Transport* network = nullptr;
    WEFT_RETURN_IF_ERROR(pickTransport(self, peer, &network));
    const std::string proxiedName = std::string("proxy/") + network->name();
    for (Transport* proxied : registry().proxies) {
      if (proxiedName == proxied->name()) {
        *transport = proxied;
        return Status::ok();
      }
    }
    return internalError("rank %d reaches rank %d through %s, which has no proxy for GPU buffers", self.rank,
                         peer.rank, network->name());
  }
  return invalidUsage("rank %d (CUDA device %d) and rank %d (CUDA device %d): both need a CUDA device for GPU "
                      "buffers",
                      self.rank, self.cudaDevice, peer.rank, peer.cudaDevice);
#else
  return invalidUsage("this build of Weft has no GPU path (built without CUDA): GPU buffers cannot be used");
#endif
}

void describeTransports(PeerInfo* self) {
#if WEFT_IB
  // NCCL_NET=Socket: ib is not looked at (no device is opened).
  self->ibPorts = strcasecmp(knobs::getString(knobs::KnobId::kNet).c_str(), "Socket") == 0 ? 0 : ib::usablePortCount();
  static std::once_flag logged;
  std::call_once(logged, [] {
    const ib::PortScan& scan = ib::usablePorts();
    if (!scan.configError.isOk()) {
      WEFT_WARN("NET/IB : off: %s", scan.configError.message().c_str());
    } else if (scan.usable.empty()) {
      WEFT_INFO(log::kNet | log::kInit, "NET/IB : off (%s); the network is sockets", scan.report.c_str());
    } else {
      WEFT_INFO(log::kNet | log::kInit, "NET/IB : %s", scan.report.c_str());
    }
  });
#else
  self->ibPorts = 0;
#endif
}

namespace {

// Why ib cannot connect `self` and `peer`, for NCCL_NET=IB.
Status ibUnavailable(const PeerInfo& self, const PeerInfo& peer) {
#if WEFT_IB
  const ib::PortScan& scan = ib::usablePorts();
  if (!scan.configError.isOk()) return scan.configError;
  if (self.ibPorts == 0) {
    return invalidUsage("NCCL_NET=IB, but rank %d (%s) has no usable verbs port: %s. Fix the ports or "
                        "NCCL_IB_HCA, or unset NCCL_NET to use sockets",
                        self.rank, self.hostname, scan.report.c_str());
  }
  return invalidUsage("NCCL_NET=IB, but rank %d (%s) has no usable verbs port (its INFO log, NCCL_DEBUG=INFO, says "
                      "why); rank %d cannot reach it over ib. Unset NCCL_NET to use sockets",
                      peer.rank, peer.hostname, self.rank);
#else
  return invalidUsage("NCCL_NET=IB, but this build of Weft has no ib transport (built without rdma-core's "
                      "headers: install libibverbs-dev and rebuild), so rank %d cannot reach rank %d; unset "
                      "NCCL_NET to use sockets",
                      self.rank, peer.rank);
#endif
}

}  // namespace

Status pickTransport(const PeerInfo& self, const PeerInfo& peer, Transport** transport) {
  *transport = nullptr;
  std::string net = knobs::getString(knobs::KnobId::kNet);
  const bool forceIb = strcasecmp(net.c_str(), "IB") == 0;
  const bool forceSocket = strcasecmp(net.c_str(), "Socket") == 0;
  if (!net.empty() && !forceIb && !forceSocket) {
    return invalidUsage("NCCL_NET=%s names a network Weft does not have; use NCCL_NET=IB or NCCL_NET=Socket, or "
                        "unset it",
                        net.c_str());
  }
  bool shmDisabled = knobs::getBool(knobs::KnobId::kShmDisable);
  for (Transport* candidate : allTransports()) {
    if (shmDisabled && strcmp(candidate->name(), "shm") == 0) continue;
    const bool isIb = strcmp(candidate->name(), "ib") == 0;
    if (isNetwork(candidate) && ((forceIb && !isIb) || (forceSocket && isIb))) continue;
#if WEFT_IB
    // A malformed NCCL_IB_HCA or NCCL_IB_ADDR_FAMILY fails rather than moving the job to sockets.
    if (isIb && !ib::usablePorts().configError.isOk()) return ib::usablePorts().configError;
#endif
    if (candidate->canConnect(self, peer)) {
      *transport = candidate;
      return Status::ok();
    }
  }
  if (forceIb) return ibUnavailable(self, peer);
  return invalidUsage("no transport can connect rank %d (%s) and rank %d (%s)", self.rank, self.hostname,
                      peer.rank, peer.hostname);
}

}  // namespace weft::transport
