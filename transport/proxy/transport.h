#pragma once
// The network proxy for GPU buffers: a rank whose buffers are in GPU memory reaches a rank of
// another host through a host network transport (socket, or ib), with a proxy thread carrying
// each piece between the kernel's staged ring in pinned host memory and the network connection
// (connection.h). The network's own setup and blob are used unchanged; both ends are proxied.

#include <memory>

#include "transport/proxy/staged_ring.h"
#include "transport/transport.h"

namespace weft::transport::proxy {

/// `network` wrapped for kernels, named "proxy/<network's name>". `network` must outlive it; the
/// staged rings come from `allocate`.
std::unique_ptr<Transport> makeProxyTransport(Transport* network, StagingAllocator allocate);

}  // namespace weft::transport::proxy
