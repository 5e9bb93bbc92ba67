#pragma once
// The ib transport: RDMA verbs over InfiniBand or RoCE (libibverbs, loaded at run time).

#include <memory>

#include "transport/transport.h"

namespace weft::transport::ib {

/// Ranks connect over ib when both have a usable port (PeerInfo::ibPorts; ports.h).
std::unique_ptr<Transport> makeIbTransport();

/// The number of verbs ports this process may use (0: none; ports.h says why).
int usablePortCount();

}  // namespace weft::transport::ib
