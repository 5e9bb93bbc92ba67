#pragma once
// The shared-memory transport: ranks of one host exchange slots through a segment in the
// shared-memory folder (WEFT_SHM_DIR, default /dev/shm) that both processes map.
// The receiving end creates and owns the segment; the sender maps it and removes its name during
// connect, so names live only between listen and connect.

#include <cstdint>
#include <memory>
#include <string>

#include "transport/transport.h"

namespace weft::transport::shm {

/// The shared-memory transport. Stateless: one instance serves every communicator and thread.
std::unique_ptr<Transport> makeShmTransport();

/// Every segment of the communicator `commHash` has a name starting with this ("weft-<hash>-").
std::string segmentNamePrefix(uint64_t commHash);

}  // namespace weft::transport::shm
