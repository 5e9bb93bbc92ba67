#pragma once
// What the receiving end of a shared-memory connection tells the sender: where its segment is and
// the geometry it was built for. Travels over the bootstrap between processes of one build.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace weft::transport::shm {

struct ShmBlob {
  uint64_t segmentBytes = 0;
  uint64_t slotBytes = 0;
  uint32_t slotCount = 0;
  uint64_t llSlotBytes = 0;
  std::string path;  // the segment file, directory included
};

std::vector<uint8_t> encodeBlob(const ShmBlob& blob);

/// kInvalidArgument if `bytes` is not a blob of this build (wrong size, magic or version).
Status decodeBlob(std::span<const uint8_t> bytes, int peerRank, ShmBlob* blob);

}  // namespace weft::transport::shm
