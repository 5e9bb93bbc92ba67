#pragma once
// The cuda_ipc transport: ranks of one host whose buffers are in GPU memory exchange slots that
// live in the receiver's device memory. GPU kernels drive both ends (DeviceEnd); the host only
// sets the connection up. Ranks of one process share pointers; ranks of different processes map
// the receiver's allocation with cudaIpcOpenMemHandle.

#include <memory>

#include "transport/transport.h"

namespace weft::transport::cuda_ipc {

/// The cuda_ipc transport. Stateless: one instance serves every communicator and thread.
std::unique_ptr<Transport> makeCudaIpcTransport();

}  // namespace weft::transport::cuda_ipc
