#pragma once
// The TCP socket transport: any two hosts that can reach each other. One TCP connection per
// direction, pair and channel; the receiver listens, the sender connects and presents a handshake.

#include <memory>

#include "transport/transport.h"

namespace weft::transport::socket {

/// The socket transport ("socket"). canConnect is true for every pair. Its network devices are the
/// interfaces NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY allow, as NCCL's socket network has them.
/// listen() listens on the channel's interface (ConnectionParams::netDevice; without one, channel c
/// takes interface c modulo their count) and returns without waiting; connect() waits for the TCP
/// connection only (retrying for WEFT_SOCKET_CONNECT_TIMEOUT seconds), never for the receiver to
/// accept it. The sender's route to that address decides which of its own interfaces carries it.
std::unique_ptr<Transport> makeSocketTransport();

}  // namespace weft::transport::socket
