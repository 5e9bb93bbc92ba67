#include "src/device/nvls_plan.h"

#include <algorithm>
#include <cstdio>

namespace weft::device {

size_t nvlsTeamBytes(int blocks) { return nvlsAreaOffset(std::clamp(blocks, 1, kMaxNvlsBlocks)); }

NvlsVerdict nvlsTeamVerdict(const std::vector<PeerInfo>& peers, bool enabled) {
  auto no = [](std::string reason) { return NvlsVerdict{false, std::move(reason)}; };
  char text[256];
  if (!enabled) return no("NCCL_NVLS_ENABLE is 0");
  if (peers.size() < 2) return no("a multicast team needs two or more ranks");
  const PeerInfo& first = peers.front();
  for (const PeerInfo& peer : peers) {
    if (peer.cudaDevice < 0 || peer.gpuBusId[0] == '\0') {
      std::snprintf(text, sizeof(text), "rank %d has no GPU", peer.rank);
      return no(text);
    }
    if (!peer.sameHost(first)) {
      std::snprintf(text, sizeof(text), "rank %d is on another host than rank %d (NVLS reaches one NVLink domain)",
                    peer.rank, first.rank);
      return no(text);
    }
  }
  for (size_t a = 0; a < peers.size(); ++a) {
    for (size_t b = 0; b < a; ++b) {
      if (std::string(peers[a].gpuBusId) == peers[b].gpuBusId) {
        std::snprintf(text, sizeof(text), "ranks %d and %d share the GPU %s (a multicast team binds one area per GPU)",
                      peers[b].rank, peers[a].rank, peers[a].gpuBusId);
        return no(text);
      }
    }
  }
  for (const PeerInfo& peer : peers) {
    if (peer.gpuMulticast == 0) {
      std::snprintf(text, sizeof(text),
                    "rank %d's GPU %s reports no multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: sm_90 or later "
                    "on NVSwitches, with the fabric manager running)",
                    peer.rank, peer.gpuBusId);
      return no(text);
    }
    if (peer.gpuInUse == 0) {
      std::snprintf(text, sizeof(text),
                    "rank %d's process was not using its GPU when the communicator was made (call cudaSetDevice "
                    "before ncclCommInitRank)",
                    peer.rank);
      return no(text);
    }
  }
  return {true, ""};
}

bool nvlsReduces(algorithms::DataType type, algorithms::RedOpKind kind, uint64_t divisor) {
  using algorithms::DataType;
  using algorithms::RedOpKind;
  if (divisor > 1) return false;
  const bool integer =
      type == DataType::kInt32 || type == DataType::kUint32 || type == DataType::kInt64 || type == DataType::kUint64;
  const bool narrow = type == DataType::kFloat16 || type == DataType::kBfloat16;
  const bool wide = type == DataType::kFloat32 || type == DataType::kFloat64;
  switch (kind) {
    case RedOpKind::kSum: return integer || narrow || wide;
    case RedOpKind::kMax:
    case RedOpKind::kMin: return integer || narrow;
    case RedOpKind::kProd:
    case RedOpKind::kPreMulSum: return false;
  }
  return false;
}

int nvlsLaunchBlocks(size_t bytes, int teamBlocks) {
  const size_t wanted = std::max<size_t>(1, (bytes + kNvlsBytesPerBlock - 1) / kNvlsBytesPerBlock);
  return static_cast<int>(std::min<size_t>(wanted, static_cast<size_t>(std::clamp(teamBlocks, 1, kMaxNvlsBlocks))));
}

}  // namespace weft::device
